"""The query is scaled in place: q *= 1/sqrt(head_dim) on the caller's own array.

np.asarray(q, dtype=np.float64) returns the very same array when q is already
float64, so the "local" scaling changes the caller's query. Symptom: this call's
output is right; the next layer or step that reuses q sees it shrunk by sqrt(head_dim)
(and again on every call).
"""

import numpy as np

from labkit.bugs import solution_with

CAUGHT_BY = ["test_paged_attention_leaves_its_inputs_alone"]


def paged_attention(q, k_cache, v_cache, block_table, seq_len, block_size):
    q = np.asarray(q, dtype=np.float64)
    block_table = np.asarray(block_table, dtype=np.int64)
    num_heads, head_dim = q.shape
    q *= 1.0 / np.sqrt(head_dim)  # BUG: modifies the caller's array
    out = np.zeros((num_heads, v_cache.shape[3]))
    if seq_len == 0:
        return out
    t = np.arange(seq_len)
    k = k_cache[block_table[t // block_size], t % block_size]
    v = v_cache[block_table[t // block_size], t % block_size]
    group = num_heads // k_cache.shape[2]
    for h in range(num_heads):
        scores = k[:, h // group, :] @ q[h]
        weights = np.exp(scores - scores.max())
        out[h] = (weights / weights.sum()) @ v[:, h // group, :]
    return out


globals().update(solution_with(__file__, paged_attention=paged_attention))
