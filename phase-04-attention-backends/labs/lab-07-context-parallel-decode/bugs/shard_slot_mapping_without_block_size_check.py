"""shard_slot_mapping checks the positions, the tables and the stripe (through token_owner) but not
block_size.

With blocks of 0 slots numpy divides by 0 with a warning only: every token lands in local block 0
at a meaningless offset. Symptom: shard_slot_mapping(.., block_size=0, ..) returns instead of
raising a ValueError naming block_size.
"""

CAUGHT_BY = ["test_layout_rejects_bad_input"]

EDIT = (
    '    block_size = _check_count("block_size", block_size)\n    world_size = tables.shape[0]\n',
    '    world_size = tables.shape[0]\n',
)
