"""No max subtracted: attend_partial exponentiates the raw scores, i.e. reports m = 0.

Algebraically harmless (0 is as good a reference point as any, and the merge keeps it
consistent), numerically fatal: float64's exp overflows to inf above ~709.8 and underflows to 0
below ~-745. Symptom: the triple test fails on m; scores near +1000 give inf/inf = NaN, scores
near -1000 give 0/0, reported as NaN or zeros.
"""

CAUGHT_BY = [
    "test_attend_partial_returns_the_unnormalized_triple",
    "test_extreme_scores_do_not_overflow",
]

EDIT = (
    "    m = float(scores.max())\n",
    "    m = 0.0  # no max: the raw scores are exponentiated\n",
)
