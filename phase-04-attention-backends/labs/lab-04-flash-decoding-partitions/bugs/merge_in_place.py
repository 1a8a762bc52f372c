"""Rescaling in place: merge_two multiplies the arguments' acc arrays in place
(``acc_a *= scale_a``) to save an allocation, and returns one of them.

The merged result is right, once. But the caller's summaries have changed under it: the next
merge that reuses one (a shared-prefix summary merged into every request of a cascade, the
same partial list merged in another order) starts from a rescaled acc paired with its old m
and denom. Symptom: the arguments differ after the call; reused summaries give wrong outputs.
"""

import numpy as np

from labkit.bugs import solution_with

CAUGHT_BY = [
    "test_merge_is_commutative",
    "test_merge_two_leaves_its_inputs_alone",
    "test_merge_is_order_invariant",
    "test_merge_is_hierarchical",
]


def merge_two(a, b):
    m_a, denom_a, acc_a = a
    m_b, denom_b, acc_b = b
    if np.shape(acc_a) != np.shape(acc_b):
        raise ValueError(f"merge_two: acc shapes differ, {np.shape(acc_a)} and {np.shape(acc_b)}")
    m = max(m_a, m_b)
    if m == -np.inf:
        return -np.inf, 0.0, np.zeros(np.shape(acc_a))
    scale_a = np.exp(m_a - m)
    scale_b = np.exp(m_b - m)
    acc_a *= scale_a  # BUG: writes into the caller's array
    acc_a += acc_b * scale_b
    return m, denom_a * scale_a + denom_b * scale_b, acc_a


globals().update(solution_with(__file__, merge_two=merge_two))
