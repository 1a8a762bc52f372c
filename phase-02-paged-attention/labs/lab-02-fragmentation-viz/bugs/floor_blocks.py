"""Blocks counted with a floor division: the partial last block is dropped.

17 tokens in blocks of 16 get one block, so the 17th token has no slot: paged memory looks
smaller than what the requests use, and a replay reports more used slots than reserved ones.
"""

CAUGHT_BY = [
    "test_blocks_needed_is_a_ceiling",
    "test_internal_fragmentation_is_the_tail_of_the_last_block",
    "test_admit_paged_counts_blocks_of_the_pool",
    "test_block_size_tradeoff_hand_computed",
    "test_serve_paged_hand_stream",
]

EDIT = (
    '    return -(-int(num_tokens) // block_size)  # ceiling division in integers: no float rounding\n',
    '    return int(num_tokens) // block_size  # floor: the partial last block is lost\n',
)
