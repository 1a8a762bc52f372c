"""Reads the cache as if it were contiguous: logical block i taken from physical block i.

Symptom: right only when the block table is the identity [0, 1, 2, ...] (as in a
freshly started engine, or a test that never shuffles); any real table gathers
other sequences' blocks or unused (poisoned) ones.
"""

import numpy as np

from labkit.bugs import solution_with

CAUGHT_BY = ["test_paged_matches_dense_exactly", "test_indirection_is_the_identity", "test_gqa_matches_dense"]


def paged_attention(q, k_cache, v_cache, block_table, seq_len, block_size):
    q = np.asarray(q, dtype=np.float64)
    num_heads, head_dim = q.shape
    out = np.zeros((num_heads, v_cache.shape[3]))
    if seq_len == 0:
        return out
    t = np.arange(seq_len)
    k = k_cache[t // block_size, t % block_size]  # BUG: the block table is never consulted
    v = v_cache[t // block_size, t % block_size]
    group = num_heads // k_cache.shape[2]
    for h in range(num_heads):
        scores = k[:, h // group, :] @ q[h] / np.sqrt(head_dim)
        weights = np.exp(scores - scores.max())
        out[h] = (weights / weights.sum()) @ v[:, h // group, :]
    return out


globals().update(solution_with(__file__, paged_attention=paged_attention))
