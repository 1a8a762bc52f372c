"""The running max is replaced by each block's own max: ``m_new = max(scores of this block)``.

The recurrence stays exact in real arithmetic whatever is subtracted, as long as the correction
``exp(m - m_new)`` is applied, so ordinary scores pass. Symptom: after a block holding a score far
above the later ones (a key 100 above the rest in the first block), the correction is exp(+100),
float32 overflows to inf, and the output is inf / inf = NaN.
"""

CAUGHT_BY = ["test_score_patterns_across_blocks"]

EDIT = (
    "        m_new = tl.maximum(m, tl.max(scores, axis=0))\n",
    "        m_new = tl.max(scores, axis=0)  # this block's max only\n",
)
