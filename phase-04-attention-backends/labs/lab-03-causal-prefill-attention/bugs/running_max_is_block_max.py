"""The running max is replaced by each block's own max: ``m_new = s.max(axis=1)``.

The recurrence stays exact in real arithmetic whatever is subtracted, as long as ``corr`` uses the
same value, so ordinary scores pass. Symptom: after a block holding a score far above the later
ones (a key 100 above the rest in the first block), ``corr = exp(m - m_new)`` is exp(+100) at
least, and a block a row cannot see at all (its future) gives it a max of -inf: inf and NaN.
"""

CAUGHT_BY = ["test_score_patterns_across_blocks"]

EDIT = (
    "            m_new = np.maximum(m[:, h], s.max(axis=1))\n",
    "            m_new = s.max(axis=1)  # this block's max only\n",
)
