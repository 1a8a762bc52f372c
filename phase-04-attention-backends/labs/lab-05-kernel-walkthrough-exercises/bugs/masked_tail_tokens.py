"""The last block's whole range listed as tokens, including those at or past seq_len.

Symptom: a 140-token sequence in blocks of 16 reports tokens 140..143 as work: those
slots hold another request's data or garbage, and their logits must stay masked.
"""

import numpy as np

from labkit import load_sibling
from labkit.bugs import solution_with

CAUGHT_BY = ["test_warp_tokens_cover_every_token_exactly_once", "test_warp_zero_of_the_source_example"]


def warp_tokens(seq_len, block_size, num_warps, warp, partition_size=0, partition=0):
    blocks = _solution.warp_blocks(seq_len, block_size, num_warps, warp, partition_size, partition)
    runs = [np.arange(b * block_size, (b + 1) * block_size, dtype=np.int64) for b in blocks]
    return np.concatenate(runs) if runs else np.zeros(0, dtype=np.int64)


_solution = load_sibling(__file__)
globals().update(solution_with(__file__, warp_tokens=warp_tokens))
