"""The block-id check compares with ``>`` the number of blocks, letting id num_blocks through.

A cache of 6 blocks holds ids 0..5; ``high > 6`` accepts 6, one past the end. Symptom: an
IndexError from inside numpy instead of a ValueError naming block_table.
"""

SOURCE = "labkit/block_table.py"  # the block-id check the given input checks call

CAUGHT_BY = ["test_bad_input_gets_a_clear_message"]

EDIT = (
    "    if low < 0 or high >= num_blocks:\n",
    "    if low < 0 or high > num_blocks:\n",
)
