"""The slot's offset in its block taken from the global position, t % block_size.

When the stripe is a multiple of the block size the two agree, so block-interleaved and contiguous
layouts hide the mistake; with single-token or 3-token stripes the offset is wrong. Symptom: slots
collide within a block.
"""

CAUGHT_BY = [
    "test_shard_slot_mapping_uses_each_ranks_own_table",
]

EDIT = (
    '    return ranks, blocks * block_size + local % block_size\n',
    '    return ranks, blocks * block_size + positions % block_size\n',
)
