"""Exponentials of raw scores: p = exp(score), no max subtracted (and so no correction).

Exact in real arithmetic. Symptom: right for scores of order 1; inf / inf = NaN once a score
passes ~88 (float32's exp overflows), and split summaries that do not match their own max.
"""

CAUGHT_BY = ["test_extreme_scores", "test_split_summaries_match_reference"]

EDIT = (
    "        correction = tl.exp(m - m_new)\n"
    "        p = tl.exp(scores - m_new[:, None])\n",
    "        correction = 1.0\n"
    "        p = tl.exp(scores)  # no max subtracted\n",
)
