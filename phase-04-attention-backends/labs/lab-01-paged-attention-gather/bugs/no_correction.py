"""Missing correction factor: acc and denom keep adding each block's weights without
rescaling the history when the running max rises.

Symptom: exact as long as the first block holds the maximum (corr would be 1
anyway); as soon as a later block raises m, earlier blocks keep weights computed
against the old, smaller max and count exp(m_new - m_old) times too much.
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
        m = max(m, s.max())
        p = np.exp(s - m)
        acc = acc + p @ v_cache[physical, :valid]  # BUG: history not multiplied by corr
        denom = denom + p.sum()  # BUG: same
    return acc / denom if seq_len else acc


globals().update(solution_with(__file__, paged_online_attention=paged_online_attention))
