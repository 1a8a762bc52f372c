"""Merge without rescaling to the shared max: denom = denom_a + denom_b and acc = acc_a + acc_b.

Each side's sums are relative to its own max; adding them mixes terms measured against two
different references. Only when both maxima happen to be equal is that right. Symptom: the
merged triple differs from the summary of the union; every split into 2 or more partitions
is wrong.
"""

import numpy as np

from labkit.bugs import solution_with

CAUGHT_BY = [
    "test_merge_two_is_the_summary_of_the_union",
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
    return m, denom_a + denom_b, acc_a + acc_b  # BUG: no exp(m_a - m), exp(m_b - m)


globals().update(solution_with(__file__, merge_two=merge_two))
