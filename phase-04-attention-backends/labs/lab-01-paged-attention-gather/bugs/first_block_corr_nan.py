"""Kernel-style loop without the first-block guard: it always visits at least one block,
reads whole blocks, masks the rows past seq_len with -inf, and computes
corr = exp(m - m_new) unguarded.

Symptom: right for every non-empty sequence (masked rows get weight exp(-inf) = 0).
For seq_len = 0 the one block it visits is entirely masked, so m_new is still -inf,
corr = exp(-inf - (-inf)) = NaN, and NaN spreads into acc and denom. With an empty
block table there is no block to visit and it crashes with an IndexError.
"""

import numpy as np

from labkit.bugs import solution_with

CAUGHT_BY = ["test_empty_sequence_gives_zeros"]


def paged_online_attention(q, k_cache, v_cache, block_table, seq_len, block_size):
    q = np.asarray(q, dtype=np.float64)
    scale = 1.0 / np.sqrt(q.shape[0])
    m, denom, acc = -np.inf, 0.0, np.zeros(v_cache.shape[2])
    num_blocks = max(1, -(-seq_len // block_size))  # BUG: at least one iteration
    for b in range(num_blocks):
        physical = block_table[b]
        positions = b * block_size + np.arange(block_size)
        s = np.where(positions < seq_len, k_cache[physical] @ q * scale, -np.inf)
        m_new = max(m, s.max())
        with np.errstate(invalid="ignore"):
            corr = np.exp(m - m_new)  # BUG: no guard for m == -inf
            p = np.exp(s - m_new)
        p = np.where(positions < seq_len, p, 0.0) if np.isfinite(m_new) else p
        acc = acc * corr + p @ np.where((positions < seq_len)[:, None], v_cache[physical], 0.0)
        denom = denom * corr + p.sum()
        m = m_new
    return acc / denom


globals().update(solution_with(__file__, paged_online_attention=paged_online_attention))
