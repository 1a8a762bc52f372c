"""The denominator is rescaled by corr but the accumulator is not.

Symptom: the mirror image of denom_not_rescaled: whenever the running max rises, the
history in acc keeps its old, larger scale while denom shrinks, so earlier tokens
are overweighted. Exact when the first block holds the maximum.
"""

import numpy as np

from labkit.bugs import solution_with

CAUGHT_BY = ["test_matches_dense_block_aligned", "test_running_max_rises_and_falls", "test_many_block_sizes"]


def paged_online_attention(q, k_cache, v_cache, block_table, seq_len, block_size):
    q = np.asarray(q, dtype=np.float64)
    scale = 1.0 / np.sqrt(q.shape[0])
    m, denom, acc = -np.inf, 0.0, np.zeros(v_cache.shape[2])
    for start in range(0, seq_len, block_size):
        physical = block_table[start // block_size]
        valid = min(block_size, seq_len - start)
        s = k_cache[physical, :valid] @ q * scale
        m_new = max(m, s.max())
        corr = np.exp(m - m_new) if m != -np.inf else 0.0
        p = np.exp(s - m_new)
        acc = acc + p @ v_cache[physical, :valid]  # BUG: should be acc * corr + p @ v
        denom = denom * corr + p.sum()
        m = m_new
    return acc / denom if seq_len else acc


globals().update(solution_with(__file__, paged_online_attention=paged_online_attention))
