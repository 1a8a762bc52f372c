"""Scores are q . k, without the 1/sqrt(head_dim) factor.

Symptom: a sharper softmax (every score sqrt(head_dim) times too large): the output
leans towards the best-matching token; no error, no NaN, just a different answer.
"""

import numpy as np

from labkit.bugs import solution_with

CAUGHT_BY = ["test_paged_matches_dense_exactly", "test_gqa_matches_dense", "test_chunked_prefill_write_path"]


def paged_attention(q, k_cache, v_cache, block_table, seq_len, block_size):
    q = np.asarray(q, dtype=np.float64)
    block_table = np.asarray(block_table, dtype=np.int64)
    num_heads, head_dim = q.shape
    out = np.zeros((num_heads, v_cache.shape[3]))
    if seq_len == 0:
        return out
    t = np.arange(seq_len)
    k = k_cache[block_table[t // block_size], t % block_size]
    v = v_cache[block_table[t // block_size], t % block_size]
    group = num_heads // k_cache.shape[2]
    for h in range(num_heads):
        scores = k[:, h // group, :] @ q[h]  # BUG: no / sqrt(head_dim)
        weights = np.exp(scores - scores.max())
        out[h] = (weights / weights.sum()) @ v[:, h // group, :]
    return out


globals().update(solution_with(__file__, paged_attention=paged_attention))
