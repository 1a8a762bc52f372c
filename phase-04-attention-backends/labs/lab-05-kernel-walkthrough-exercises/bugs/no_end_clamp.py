"""The last partition not cut at the sequence's last block.

Symptom: a 2,000-token sequence's last partition visits blocks up to 127 although
only 125 exist: the kernel reads block-table entries past the sequence (padding,
often block 0) as if they held tokens.
"""

import numpy as np

from labkit.bugs import solution_with

CAUGHT_BY = ["test_warp_blocks_match_a_brute_force_deal"]


def warp_blocks(seq_len, block_size, num_warps, warp, partition_size=0, partition=0):
    num_seq_blocks = -(-seq_len // block_size)
    if partition_size:
        per = partition_size // block_size
        if partition * per >= num_seq_blocks:
            return np.zeros(0, dtype=np.int64)
        start, end = partition * per, partition * per + per
    else:
        start, end = 0, num_seq_blocks
    return np.arange(start + warp, end, num_warps, dtype=np.int64)


globals().update(solution_with(__file__, warp_blocks=warp_blocks))
