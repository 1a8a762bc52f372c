"""No seq_len == 0 case: the loop runs zero times and the function returns acc / denom = 0/0.

Symptom: right for every non-empty sequence; NaN (with a RuntimeWarning) for a
request with nothing cached yet, where zeros are expected.
"""

import numpy as np

from labkit.bugs import solution_with

CAUGHT_BY = ["test_empty_sequence_gives_zeros"]


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
        acc = acc * corr + p @ v_cache[physical, :valid]
        denom = denom * corr + p.sum()
        m = m_new
    with np.errstate(invalid="ignore"):
        return acc / denom  # BUG: 0/0 when seq_len == 0


globals().update(solution_with(__file__, paged_online_attention=paged_online_attention))
