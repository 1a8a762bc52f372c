"""Grouped-query mapping written as h // num_kv_heads (dividing by the wrong count).

Symptom: the two agree only when num_heads == num_kv_heads ** 2 (e.g. 4 query heads
over 2 KV heads) or for multi-query attention; plain multi-head attention sends every
query head to KV head 0, and other ratios read the wrong KV head or one past the last
(IndexError).
"""

import numpy as np

from labkit.bugs import solution_with

CAUGHT_BY = ["test_gqa_matches_dense", "test_paged_matches_dense_exactly"]


def paged_attention(q, k_cache, v_cache, block_table, seq_len, block_size):
    q = np.asarray(q, dtype=np.float64)
    block_table = np.asarray(block_table, dtype=np.int64)
    num_heads, head_dim = q.shape
    num_kv_heads = k_cache.shape[2]
    out = np.zeros((num_heads, v_cache.shape[3]))
    if seq_len == 0:
        return out
    t = np.arange(seq_len)
    k = k_cache[block_table[t // block_size], t % block_size]
    v = v_cache[block_table[t // block_size], t % block_size]
    for h in range(num_heads):
        kv_head = h // num_kv_heads  # BUG: should divide by the group size num_heads // num_kv_heads
        scores = k[:, kv_head, :] @ q[h] / np.sqrt(head_dim)
        weights = np.exp(scores - scores.max())
        out[h] = (weights / weights.sum()) @ v[:, kv_head, :]
    return out


globals().update(solution_with(__file__, paged_attention=paged_attention))
