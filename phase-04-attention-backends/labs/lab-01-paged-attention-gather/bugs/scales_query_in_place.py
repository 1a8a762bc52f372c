"""The query is scaled in place: q *= 1/sqrt(d) on the caller's own array.

np.asarray(q, dtype=np.float64) returns the very same array when q is already
float64, so the "local" scaling changes the caller's query. Symptom: this call's
output is right; whoever reuses q next (another head's pass, the next step, or
dense_attention as the oracle) sees it shrunk by sqrt(d).
"""

import numpy as np

from labkit.bugs import solution_with

CAUGHT_BY = ["test_inputs_are_left_unchanged"]


def paged_online_attention(q, k_cache, v_cache, block_table, seq_len, block_size):
    q = np.asarray(q, dtype=np.float64)
    q *= 1.0 / np.sqrt(q.shape[0])  # BUG: modifies the caller's array
    m, denom, acc = -np.inf, 0.0, np.zeros(v_cache.shape[2])
    for start in range(0, seq_len, block_size):
        physical = block_table[start // block_size]
        valid = min(block_size, seq_len - start)
        s = k_cache[physical, :valid] @ q
        m_new = max(m, s.max())
        corr = np.exp(m - m_new) if m != -np.inf else 0.0
        p = np.exp(s - m_new)
        acc = acc * corr + p @ v_cache[physical, :valid]
        denom = denom * corr + p.sum()
        m = m_new
    return acc / denom if seq_len else acc


globals().update(solution_with(__file__, paged_online_attention=paged_online_attention))
