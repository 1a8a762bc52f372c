"""The block_size check accepts 0 (``< 0`` where it should be ``< 1``).

With a cache whose blocks hold 0 tokens the shapes agree, and the division by block_size comes
later. Symptom: ZeroDivisionError instead of a ValueError naming block_size.
"""

SOURCE = "_checks.py"  # the given input checks

CAUGHT_BY = ["test_bad_input_gets_a_clear_message"]

EDIT = (
    "    if int(block_size) < 1 or k_cache.shape[1] != block_size:\n",
    "    if int(block_size) < 0 or k_cache.shape[1] != block_size:\n",
)
