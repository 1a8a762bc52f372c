"""The block-id check compares with ``>`` the number of blocks, letting id num_blocks through.

A cache of n blocks holds ids 0..n-1; ``high > n`` accepts n, one past the end. Symptom: an
IndexError from inside numpy instead of a ValueError naming block_table.
"""

CAUGHT_BY = ["test_bad_input_gets_a_clear_message"]

SOURCE = "labkit/block_table.py"  # the block-id check the given input checks call

EDIT = (
    "    if low < 0 or high >= num_blocks:\n",
    "    if low < 0 or high > num_blocks:\n",
)
