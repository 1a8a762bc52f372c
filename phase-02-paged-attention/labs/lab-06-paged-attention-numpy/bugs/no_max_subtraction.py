"""Softmax as exp(scores) / sum(exp(scores)), without subtracting the row's max first.

Symptom: exact on ordinary scores; NaN as soon as a score passes ~709 (exp overflows
to inf, inf/inf) or every score is below ~-745 (exp underflows to 0, 0/0).
"""

import numpy as np

from labkit.bugs import solution_with

CAUGHT_BY = ["test_large_logits_do_not_overflow"]


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
        scores = k[:, h // group, :] @ q[h] / np.sqrt(head_dim)
        with np.errstate(over="ignore", invalid="ignore"):
            weights = np.exp(scores)  # BUG: no max subtracted
            out[h] = (weights / weights.sum()) @ v[:, h // group, :]
    return out


globals().update(solution_with(__file__, paged_attention=paged_attention))
