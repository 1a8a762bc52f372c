"""The table's width checked against the global block t // block_size instead of the local one.

A rank's table holds only its own blocks: about 1/world_size of the sequence's. Symptom:
shard_slot_mapping refuses valid tables ("rank_block_tables has 6 columns, but a token needs local
block 11"); the test says the tables were valid and to check the width with local // block_size.
"""

CAUGHT_BY = ["test_shard_slot_mapping_uses_each_ranks_own_table"]

EDIT = (
    '    _check_table_width(tables, ranks, local_blocks)\n',
    '    _check_table_width(tables, ranks, positions // block_size)\n',
)
