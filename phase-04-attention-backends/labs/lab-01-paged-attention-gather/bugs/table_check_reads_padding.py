"""The block-table check looks at one entry past the blocks the sequence uses.

``used = block_table[:needed + 1]`` also checks the first padding entry, which names no block
(-1, or garbage: a table padded to a batch's longest sequence). Symptom: a valid call refused with
"block_table ... names a block outside the cache".
"""

SOURCE = "_checks.py"  # the given input checks

CAUGHT_BY = ["test_table_entries_past_the_sequence_are_never_read"]

EDIT = (
    "    used = block_table[:needed]\n",
    "    used = block_table[:needed + 1]  # one entry too many\n",
)
