"""The block-id check compares with ``>`` the number of blocks, letting id num_blocks through.

A cache of 6 blocks holds ids 0..5; ``used.max() > 6`` accepts 6, one past the end. Symptom: an
IndexError from inside numpy instead of a ValueError naming block_table.
"""

SOURCE = "_checks.py"  # the given input checks

CAUGHT_BY = ["test_bad_input_gets_a_clear_message"]

EDIT = (
    "    if used.size and (used.min() < 0 or used.max() >= k_cache.shape[0]):\n",
    "    if used.size and (used.min() < 0 or used.max() > k_cache.shape[0]):\n",
)
