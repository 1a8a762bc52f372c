"""The block-id check forgets negative ids, and numpy reads block -1 as the last block of the cache.

A block table with a -1 in it (an uninitialised entry, another engine's padding convention) then
silently attends over another sequence's keys and values. Symptom: no error, a wrong answer; the
given check (labkit/block_table.py) refuses it with a ValueError naming block_table.
"""

SOURCE = "labkit/block_table.py"  # the block-id check the given input checks call

CAUGHT_BY = ["test_bad_input_gets_a_clear_message"]

EDIT = (
    "    if low < 0 or high >= num_blocks:\n",
    "    if high >= num_blocks:  # negative ids pass\n",
)
