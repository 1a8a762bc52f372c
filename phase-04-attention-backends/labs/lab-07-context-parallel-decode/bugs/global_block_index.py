"""The rank's block table indexed with the token's global block number t // block_size.

Each rank's table lists only its own blocks, numbered by its own (local) order. Indexing it with the
global block number reads the wrong entry, or past the table's end. Symptom: K/V written to other
tokens' slots, or a ValueError about the table's width.
"""

CAUGHT_BY = [
    "test_shard_slot_mapping_uses_each_ranks_own_table",
]

EDIT = (
    '    local_blocks = local // block_size\n',
    '    local_blocks = positions // block_size  # the global block\n',
)
