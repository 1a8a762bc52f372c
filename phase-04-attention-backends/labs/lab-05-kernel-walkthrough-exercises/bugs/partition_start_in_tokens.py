"""A partition's first block taken as ``partition * partition_size``: a token index used as a block index.

Symptom: partition 0 is right; partition 1 starts at block 512 instead of block 32
(blocks of 16), far past a 2,048-token sequence, so its tokens are never scored.
"""

import numpy as np

from labkit.bugs import solution_with

CAUGHT_BY = ["test_warp_blocks_match_a_brute_force_deal", "test_warp_tokens_cover_every_token_exactly_once"]


def warp_blocks(seq_len, block_size, num_warps, warp, partition_size=0, partition=0):
    num_seq_blocks = -(-seq_len // block_size)
    if partition_size:
        start = partition * partition_size
        end = min(start + partition_size // block_size, num_seq_blocks)
    else:
        start, end = 0, num_seq_blocks
    return np.arange(start + warp, end, num_warps, dtype=np.int64)


globals().update(solution_with(__file__, warp_blocks=warp_blocks))
