"""The new block's weights are computed against the max from before the block:
p = exp(s - m) instead of exp(s - m_new).

Symptom: on the first block m is still -inf, so exp(s + inf) = inf and the output is
NaN for every non-empty sequence. (Initialising m to 0 instead hides the NaN and
leaves a stale-max bug that only huge logits expose.)
"""

import numpy as np

from labkit.bugs import solution_with

CAUGHT_BY = ["test_matches_dense_block_aligned", "test_matches_dense_partial_last_block", "test_seq_len_one"]


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
        with np.errstate(over="ignore", invalid="ignore"):
            p = np.exp(s - m)  # BUG: should subtract m_new
            acc = acc * corr + p @ v_cache[physical, :valid]
            denom = denom * corr + p.sum()
        m = m_new
    with np.errstate(invalid="ignore"):
        return acc / denom if seq_len else acc


globals().update(solution_with(__file__, paged_online_attention=paged_online_attention))
