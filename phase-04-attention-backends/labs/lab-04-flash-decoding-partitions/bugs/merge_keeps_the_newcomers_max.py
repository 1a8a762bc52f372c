"""merge_two takes the second argument's max as the shared reference instead of the larger of the two.

Any common reference is exact on paper, so while the newcomer's max is the larger, or close to the
other's, the result is right to rounding (its m is not the max, which the triple tests see). When
a later partition scores 1000 below an earlier one, exp(m_a - m_b) = exp(1000) overflows to inf.
Symptom: inf or NaN once a hot partition is followed by ordinary ones.
"""

CAUGHT_BY = ["test_merge_two_is_the_summary_of_the_union", "test_extreme_scores_do_not_overflow"]

EDIT = (
    "    m = max(m_a, m_b)\n",
    "    m = m_b if m_b > -np.inf else m_a  # the newcomer's max\n",
)
