"""The running max is taken from the first block and never raised afterwards.

Symptom: mathematically harmless on ordinary scores (any fixed shift cancels in acc / denom, and
corr stays 1), which is why tests with random data miss it. A later block with a score far above
the first block's max (~1000) makes exp(s - m) overflow to inf, and the output becomes
inf/inf = NaN.
"""

CAUGHT_BY = ["test_large_logits_need_a_running_max"]

EDIT = (
    "        m_new = max(m, s.max())\n",
    "        m_new = s.max() if m == -np.inf else m  # the first block's max, never raised\n",
)
