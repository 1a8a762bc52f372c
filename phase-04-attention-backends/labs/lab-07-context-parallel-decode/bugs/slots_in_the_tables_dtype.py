"""shard_slot_mapping multiplies the block ids in the table's own integer type.

The cast to int64 is gone, so ``block * block_size`` is computed in whatever type the caller's
table has, and wraps around when it does not fit: a uint8 table's block 200, with blocks of 16,
gives slot 3200 mod 256 = 128. Symptom: right slots while the ids are small, wrong ones (another
block's, or negative) once block * block_size passes the type's largest value.
"""

CAUGHT_BY = ["test_shard_slot_mapping_uses_each_ranks_own_table"]

EDIT = (
    "    blocks = tables[ranks, local_blocks].astype(np.int64)\n",
    "    blocks = tables[ranks, local_blocks]  # the table's own dtype\n",
)
