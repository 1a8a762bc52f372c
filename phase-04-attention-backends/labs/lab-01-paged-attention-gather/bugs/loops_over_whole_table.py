"""The loop visits every entry of the block table instead of the blocks that cover seq_len.

Symptom: right whenever the table holds exactly ceil(seq_len / block_size) entries.
Past the last block, valid = seq_len - start turns negative and numpy's slice
[:valid] quietly means "all but the last few rows": padding blocks of a batched
table (poisoned in the tests) join the softmax.
"""

import numpy as np

from labkit.bugs import solution_with

CAUGHT_BY = ["test_matches_dense_partial_last_block"]


def paged_online_attention(q, k_cache, v_cache, block_table, seq_len, block_size):
    q = np.asarray(q, dtype=np.float64)
    scale = 1.0 / np.sqrt(q.shape[0])
    m, denom, acc = -np.inf, 0.0, np.zeros(v_cache.shape[2])
    for logical in range(len(block_table)):  # BUG: should stop at ceil(seq_len / block_size)
        start = logical * block_size
        physical = block_table[logical]
        valid = min(block_size, seq_len - start)
        s = k_cache[physical, :valid] @ q * scale
        if s.size == 0:
            continue
        m_new = max(m, s.max())
        corr = np.exp(m - m_new) if m != -np.inf else 0.0
        p = np.exp(s - m_new)
        acc = acc * corr + p @ v_cache[physical, :valid]
        denom = denom * corr + p.sum()
        m = m_new
    return acc / denom if seq_len else acc


globals().update(solution_with(__file__, paged_online_attention=paged_online_attention))
