"""Gathers len(block_table) * block_size rows instead of seq_len: the unused tail of the
last block (and any padding entries of the table) joins the softmax.

Symptom: right whenever seq_len fills its blocks exactly and the table has no spare
entries; off by orders of magnitude as soon as the tail holds poison (1e6).
"""

import numpy as np

from labkit.bugs import solution_with

CAUGHT_BY = ["test_partial_tail_block_is_masked", "test_paged_matches_dense_exactly", "test_gqa_matches_dense"]


def paged_attention(q, k_cache, v_cache, block_table, seq_len, block_size):
    q = np.asarray(q, dtype=np.float64)
    block_table = np.asarray(block_table, dtype=np.int64)
    num_heads, head_dim = q.shape
    out = np.zeros((num_heads, v_cache.shape[3]))
    if seq_len == 0:
        return out
    t = np.arange(len(block_table) * block_size)  # BUG: every slot the table names
    k = k_cache[block_table[t // block_size], t % block_size]
    v = v_cache[block_table[t // block_size], t % block_size]
    group = num_heads // k_cache.shape[2]
    for h in range(num_heads):
        scores = k[:, h // group, :] @ q[h] / np.sqrt(head_dim)
        weights = np.exp(scores - scores.max())
        out[h] = (weights / weights.sum()) @ v[:, h // group, :]
    return out


globals().update(solution_with(__file__, paged_attention=paged_attention))
