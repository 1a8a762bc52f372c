"""Each warp takes a contiguous chunk of blocks instead of every NUM_WARPS-th block.

Symptom: the union is still every block, but warp w visits the wrong ones: a kernel
whose later steps assume the warp-stride order (the PV loop re-walks the same blocks)
mixes up which warp holds which logits.
"""

import numpy as np

from labkit.bugs import solution_with

CAUGHT_BY = ["test_warp_blocks_match_a_brute_force_deal", "test_warp_zero_of_the_source_example"]


def warp_blocks(seq_len, block_size, num_warps, warp, partition_size=0, partition=0):
    num_seq_blocks = -(-seq_len // block_size)
    if partition_size:
        per = partition_size // block_size
        start, end = partition * per, min(partition * per + per, num_seq_blocks)
    else:
        start, end = 0, num_seq_blocks
    chunk = -(-max(end - start, 0) // num_warps)
    lo = start + warp * chunk
    return np.arange(lo, min(lo + chunk, end), dtype=np.int64)


globals().update(solution_with(__file__, warp_blocks=warp_blocks))
