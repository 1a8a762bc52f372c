"""attend_partial normalizes: it returns (m, denom, acc / denom) and the merge, which expects
an unnormalized acc, treats the normalized output as if it were one.

The merge then divides by the merged denominator a second time. Symptom: even one partition
is wrong (the output comes out divided by denom twice), and the triple test shows acc too
small by exactly the factor denom.
"""

import numpy as np

from labkit.bugs import solution_with

CAUGHT_BY = [
    "test_attend_partial_returns_the_unnormalized_triple",
    "test_one_partition_is_just_attention",
    "test_any_partition_count_matches_dense",
    "test_extreme_scores_do_not_overflow",
]


def attend_partial(q, k, v):
    q, k, v = _as_query_keys_values(q, k, v)  # noqa: F821 (from the solution, below)
    if k.shape[0] == 0:
        return -np.inf, 0.0, np.zeros(v.shape[1])
    scores = k @ q / np.sqrt(q.shape[0])
    m = float(scores.max())
    weights = np.exp(scores - m)
    denom = float(weights.sum())
    return m, denom, (weights @ v) / denom  # BUG: acc must stay unnormalized


globals().update(solution_with(__file__, attend_partial=attend_partial))
