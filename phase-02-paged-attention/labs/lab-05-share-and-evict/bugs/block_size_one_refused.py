"""The constructor refuses a block size of 1 along with the 0 it is meant for.

A block of one token is a block size like any other; ``block_size < 2`` says otherwise. Symptom:
KVCacheManager(8, 1) raises a ValueError naming block_size.
"""

CAUGHT_BY = ["test_block_sizes_from_one_and_the_usage"]

SOURCE = "_manager_base.py"

EDIT = (
    "        if isinstance(block_size, bool) or not isinstance(block_size, int) or block_size < 1:\n",
    "        if isinstance(block_size, bool) or not isinstance(block_size, int) or block_size < 2:\n",
)
