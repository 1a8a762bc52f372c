"""The max taken over the wrong array: m is the largest entry of v (what gets accumulated)
instead of the largest score.

The triple stays self-consistent (denom and acc are relative to the same m), so ordinary
inputs still give the right output: the max is only a reference point. It stops protecting
anything, though: with scores near 1000 and values near 1, exp(s - m) = exp(~997) = inf.
Symptom: the triple test fails on m; the overflow test gives inf/NaN.
"""

import numpy as np

from labkit.bugs import solution_with

CAUGHT_BY = [
    "test_attend_partial_returns_the_unnormalized_triple",
    "test_extreme_scores_do_not_overflow",
]


def attend_partial(q, k, v):
    q, k, v = _as_query_keys_values(q, k, v)  # noqa: F821 (from the solution, below)
    if k.shape[0] == 0:
        return -np.inf, 0.0, np.zeros(v.shape[1])
    scores = k @ q / np.sqrt(q.shape[0])
    m = float(v.max())  # BUG: the max of the values, not of the scores
    weights = np.exp(scores - m)
    return m, float(weights.sum()), weights @ v


globals().update(solution_with(__file__, attend_partial=attend_partial))
