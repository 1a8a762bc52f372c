"""Rescaling only one side: the merge multiplies b by exp(m_b - m) but leaves a as it is.

That is right exactly when a already holds the larger max (then exp(m_a - m) = 1), which is
how a left-to-right fold whose first partition holds the global max still comes out right.
Symptom: merge(a, b) != merge(b, a); results depend on the order and the bracketing.
"""

import numpy as np

from labkit.bugs import solution_with

CAUGHT_BY = [
    "test_merge_two_is_the_summary_of_the_union",
    "test_merge_is_commutative",
    "test_merge_is_associative",
    "test_merge_partials_matches_dense_attention",
    "test_any_partition_count_matches_dense",
    "test_more_partitions_than_keys",
    "test_merge_is_order_invariant",
    "test_merge_is_hierarchical",
    "test_extreme_scores_do_not_overflow",
]


def merge_two(a, b):
    m_a, denom_a, acc_a = _as_summary(a, "merge_two: a")  # noqa: F821 (from the solution, below)
    m_b, denom_b, acc_b = _as_summary(b, "merge_two: b")  # noqa: F821
    if acc_a.shape != acc_b.shape:
        raise ValueError(f"merge_two: acc shapes differ, {acc_a.shape} and {acc_b.shape}")
    m = max(m_a, m_b)
    if m == -np.inf:
        return -np.inf, 0.0, np.zeros_like(acc_a)
    scale_b = np.exp(m_b - m)
    return m, denom_a + denom_b * scale_b, acc_a + acc_b * scale_b  # BUG: a needs exp(m_a - m) too


globals().update(solution_with(__file__, merge_two=merge_two))
