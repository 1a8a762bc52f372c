"""Kernel: the running max is replaced by each key tile's own max: ``m_new = tl.max(s, axis=1)``.

Exact in real arithmetic (``alpha`` uses the same value), so moderate scores pass. Symptom: after a
key tile holding a score far above the later ones (a key 100 above the rest in the first tile),
``alpha = exp(m - m_new)`` overflows float32 to inf, and the row's output is inf / inf = NaN.
"""

CAUGHT_BY = ["test_kernel_score_patterns_across_key_tiles"]

EDIT = (
    "        m_new = tl.maximum(m, tl.max(s, axis=1))\n",
    "        m_new = tl.max(s, axis=1)  # this tile's max only\n",
)
