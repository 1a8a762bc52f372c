"""Every block is read in full, including the last one: valid = block_size instead of
min(block_size, seq_len - start).

Symptom: right whenever seq_len is a multiple of block_size; otherwise the unused tail
of the last block joins the softmax (with poisoned slots: off by orders of magnitude).
"""

import numpy as np

from labkit.bugs import solution_with

CAUGHT_BY = ["test_matches_dense_partial_last_block", "test_many_block_sizes", "test_seq_len_one"]


def paged_online_attention(q, k_cache, v_cache, block_table, seq_len, block_size):
    q = np.asarray(q, dtype=np.float64)
    scale = 1.0 / np.sqrt(q.shape[0])
    m, denom, acc = -np.inf, 0.0, np.zeros(v_cache.shape[2])
    for start in range(0, seq_len, block_size):
        physical = block_table[start // block_size]
        valid = block_size  # BUG: the last block may hold fewer tokens
        s = k_cache[physical, :valid] @ q * scale
        m_new = max(m, s.max())
        corr = np.exp(m - m_new) if m != -np.inf else 0.0
        p = np.exp(s - m_new)
        acc = acc * corr + p @ v_cache[physical, :valid]
        denom = denom * corr + p.sum()
        m = m_new
    return acc / denom if seq_len else acc


globals().update(solution_with(__file__, paged_online_attention=paged_online_attention))
