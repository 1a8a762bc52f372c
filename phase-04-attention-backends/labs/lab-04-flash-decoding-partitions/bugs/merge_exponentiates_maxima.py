"""The rescaling factor written as exp(m_a) / exp(m) instead of exp(m_a - m).

Algebraically the same number; numerically exp(1000) is inf and exp(-1000) is 0, so with maxima
beyond float64's exp range the factor is inf / inf or 0 / 0 = NaN. Symptom: exact on ordinary
scores; NaN as soon as a partition's max passes ~709.8 or every max is below ~-745.
"""

CAUGHT_BY = ["test_extreme_scores_do_not_overflow"]

EDIT = (
    "    scale_a = np.exp(m_a - m)\n    scale_b = np.exp(m_b - m)\n",
    "    scale_a = np.exp(m_a) / np.exp(m)  # exp(m_a - m) on paper; inf / inf past exp's range\n"
    "    scale_b = np.exp(m_b) / np.exp(m)\n",
)
