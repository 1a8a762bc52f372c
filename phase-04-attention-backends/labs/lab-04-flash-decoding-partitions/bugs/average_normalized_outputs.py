"""Averaging normalized partial outputs: each partition's output acc/denom is computed, then
the outputs are averaged with equal weights.

A partition's output says where its attention mass points, not how much mass it holds: a
partition whose keys score low deserves almost no weight, and one with twice the keys (or
much higher scores) deserves more. The average forgets both. Symptom: one partition is
right (an average of one output is itself); every split into 2 or more partitions is off by
O(0.1), in any order.
"""

import numpy as np

from labkit.bugs import solution_with

CAUGHT_BY = [
    "test_merge_partials_matches_dense_attention",
    "test_any_partition_count_matches_dense",
    "test_more_partitions_than_keys",
    "test_merge_is_order_invariant",
    "test_merge_is_hierarchical",
    "test_extreme_scores_do_not_overflow",
]


def merge_partials(partials):
    outputs = [np.asarray(acc, dtype=np.float64) / denom for m, denom, acc in partials if denom > 0]
    if not outputs:
        return np.zeros_like(np.asarray(partials[0][2], dtype=np.float64)) if partials else np.zeros(())
    return np.mean(outputs, axis=0)  # BUG: equal weights; the weight of partition i is denom_i * exp(m_i - m)


globals().update(solution_with(__file__, merge_partials=merge_partials))
