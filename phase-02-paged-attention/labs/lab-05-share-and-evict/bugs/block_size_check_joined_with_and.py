"""The block size check joins its two conditions with ``and``: only a value that is no integer and
below 1 at once is refused.

0, a negative size or 2.0 pass, and the manager divides by them later. Symptom: KVCacheManager(8, 0)
builds a manager instead of raising a ValueError naming block_size.
"""

CAUGHT_BY = ["test_block_sizes_from_one_and_the_usage"]

SOURCE = "_manager_base.py"

EDIT = (
    "        if isinstance(block_size, bool) or not isinstance(block_size, int) or block_size < 1:\n",
    "        if isinstance(block_size, bool) or not isinstance(block_size, int) and block_size < 1:\n",
)
