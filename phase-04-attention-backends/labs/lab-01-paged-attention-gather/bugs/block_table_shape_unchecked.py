"""The block table's rank is never checked: a 2-D table (a whole batch's) goes through.

With as many rows as the sequence has blocks, the length check passes too, and
``block_table[start // block_size]`` is a row of ids, not one id. Symptom: a wrong-shaped answer
or a numpy error from deep inside the loop, instead of a ValueError naming block_table.
"""

SOURCE = "_checks.py"  # the given input checks

CAUGHT_BY = ["test_bad_input_gets_a_clear_message"]

EDIT = (
    "    if block_table.ndim != 1 or (block_table.size and not np.issubdtype(block_table.dtype, np.integer)):\n",
    "    if block_table.size and not np.issubdtype(block_table.dtype, np.integer):\n",
)
