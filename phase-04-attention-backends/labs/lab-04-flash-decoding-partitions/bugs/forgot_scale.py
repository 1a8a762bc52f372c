"""Forgetting the scale: scores are q . k instead of q . k / sqrt(d).

The softmax is then sharper than the model's (with d = 16, four times the logits). Every
split agrees with every other, so tests that only compare partitionings with each other
would pass; only a comparison with the brute force catches it. Symptom: every output is
wrong, including with one partition.
"""

import numpy as np

from labkit.bugs import solution_with

CAUGHT_BY = [
    "test_attend_partial_returns_the_unnormalized_triple",
    "test_one_partition_is_just_attention",
    "test_any_partition_count_matches_dense",
    "test_more_partitions_than_keys",
    "test_extreme_scores_do_not_overflow",
]


def attend_partial(q, k, v):
    q, k, v = _as_query_keys_values(q, k, v)  # noqa: F821 (from the solution, below)
    if k.shape[0] == 0:
        return -np.inf, 0.0, np.zeros(v.shape[1])
    scores = k @ q  # BUG: missing / sqrt(d)
    m = float(scores.max())
    weights = np.exp(scores - m)
    return m, float(weights.sum()), weights @ v


globals().update(solution_with(__file__, attend_partial=attend_partial))
