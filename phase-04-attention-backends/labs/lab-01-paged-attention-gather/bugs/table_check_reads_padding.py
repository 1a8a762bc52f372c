"""The block-table check looks at one entry past the blocks the sequence uses.

``block_table[:needed + 1]`` also checks the first padding entry, which names no block
(-1, or garbage: a table padded to a batch's longest sequence). Symptom: a valid call refused with
"block_table holds block ids outside the cache's [0, num_blocks)".
"""

SOURCE = "labkit/block_table.py"  # the block-id check the given input checks call

CAUGHT_BY = ["test_table_entries_past_the_sequence_are_never_read"]

EDIT = (
    "        return block_tables[: blocks_needed(int(seq_lens), block_size)]\n",
    "        return block_tables[: blocks_needed(int(seq_lens), block_size) + 1]  # one entry too many\n",
)
