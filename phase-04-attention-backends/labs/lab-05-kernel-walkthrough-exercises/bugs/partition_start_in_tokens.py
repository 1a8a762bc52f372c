"""A partition's first block taken as ``partition * partition_size``: a token index used as a block index.

Symptom: partition 0 is right; partition 1 starts at block 512 instead of block 32 (blocks
of 16), far past a 2,048-token sequence, so its tokens are never scored.
"""

CAUGHT_BY = ["test_warp_blocks_match_a_brute_force_deal", "test_warp_tokens_cover_every_token_exactly_once"]

EDIT = (
    '        start = partition * blocks_per_partition\n',
    '        start = partition * partition_size  # BUG: tokens, not blocks\n',
)
