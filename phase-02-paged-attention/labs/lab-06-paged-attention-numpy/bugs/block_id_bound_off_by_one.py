"""The block-id check compares with ``>`` the number of blocks, letting id num_blocks through.

A cache of n blocks holds ids 0..n-1; ``used.max() > n`` accepts n, one past the end. Symptom: an
IndexError from inside numpy instead of a ValueError naming block_table.
"""

CAUGHT_BY = ["test_bad_input_gets_a_clear_message"]

SOURCE = "_checks.py"  # the given input checks

EDIT = (
    "    if used.size and (used.min() < 0 or used.max() >= k_cache.shape[0]):\n",
    "    if used.size and (used.min() < 0 or used.max() > k_cache.shape[0]):\n",
)
