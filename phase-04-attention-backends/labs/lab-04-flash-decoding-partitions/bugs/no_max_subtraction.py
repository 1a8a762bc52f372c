"""No max subtracted: attend_partial exponentiates the raw scores, i.e. reports m = 0.

Algebraically harmless (0 is as good a reference point as any, and the merge keeps it
consistent), numerically fatal: float64's exp overflows to inf above ~709.8 and underflows to
0 below ~-745. Symptom: the triple test fails on m; scores near +1000 give inf/inf = NaN,
scores near -1000 give 0/0, reported as NaN or zeros.
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
    weights = np.exp(scores)  # BUG: exp of raw scores
    return 0.0, float(weights.sum()), weights @ v


globals().update(solution_with(__file__, attend_partial=attend_partial))
