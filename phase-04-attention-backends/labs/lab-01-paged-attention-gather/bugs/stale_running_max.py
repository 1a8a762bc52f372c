"""The running max is taken from the first block and never updated afterwards.

Symptom: mathematically harmless on ordinary scores (any fixed shift cancels in
acc / denom, and corr stays 1), which is why tests with random data miss it. A
later block with a score far above the first block's max (~1000) makes
exp(s - m) overflow to inf, and the output becomes inf/inf = NaN.
"""

import numpy as np

from labkit.bugs import solution_with

CAUGHT_BY = ["test_large_logits_need_a_running_max"]


def paged_online_attention(q, k_cache, v_cache, block_table, seq_len, block_size):
    q = np.asarray(q, dtype=np.float64)
    scale = 1.0 / np.sqrt(q.shape[0])
    m, denom, acc = -np.inf, 0.0, np.zeros(v_cache.shape[2])
    for start in range(0, seq_len, block_size):
        physical = block_table[start // block_size]
        valid = min(block_size, seq_len - start)
        s = k_cache[physical, :valid] @ q * scale
        if m == -np.inf:
            m = s.max()  # BUG: the max of the first block only, never raised later
        with np.errstate(over="ignore", invalid="ignore"):
            p = np.exp(s - m)
            acc = acc + p @ v_cache[physical, :valid]
            denom = denom + p.sum()
    with np.errstate(invalid="ignore"):
        return acc / denom if seq_len else acc


globals().update(solution_with(__file__, paged_online_attention=paged_online_attention))
