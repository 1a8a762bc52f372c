"""The max is taken over the values instead of the scores.

m is the largest entry of v (what gets accumulated) instead of the largest score.

The triple stays self-consistent (denom and acc are relative to the same m), so ordinary inputs
still give the right output: the max is only a reference point. It stops protecting anything,
though: with scores near 1000 and values near 1, exp(s - m) = exp(~997) = inf. Symptom: the
triple test fails on m; the overflow test gives inf/NaN.
"""

CAUGHT_BY = [
    "test_attend_partial_returns_the_unnormalized_triple",
    "test_extreme_scores_do_not_overflow",
]

EDIT = (
    "    m = float(scores.max())\n",
    "    m = float(v.max())  # the max of the values, not of the scores\n",
)
