"""A merge that is not identity-safe: it computes exp(m_a - m) and exp(m_b - m) without
checking for two identities, and exp(-inf - (-inf)) = exp(NaN) = NaN.

One real summary against an identity is fine (exp(-inf) = 0); two identities (two empty
partitions, or a fold that starts from the identity before any real summary) turn the
result into NaN, and NaN then poisons every later merge. Symptom: NaN from
merge(identity, identity) and from merge_partials of identities.
"""

import numpy as np

from labkit.bugs import solution_with

CAUGHT_BY = [
    "test_merge_of_two_identities_is_the_identity",
    "test_merge_partials_of_no_keys_is_zeros",
]


def merge_two(a, b):
    m_a, denom_a, acc_a = _as_summary(a, "merge_two: a")  # noqa: F821 (from the solution, below)
    m_b, denom_b, acc_b = _as_summary(b, "merge_two: b")  # noqa: F821
    if acc_a.shape != acc_b.shape:
        raise ValueError(f"merge_two: acc shapes differ, {acc_a.shape} and {acc_b.shape}")
    m = max(m_a, m_b)
    scale_a = np.exp(m_a - m)  # BUG: NaN when m_a = m = -inf
    scale_b = np.exp(m_b - m)
    return m, denom_a * scale_a + denom_b * scale_b, acc_a * scale_a + acc_b * scale_b


globals().update(solution_with(__file__, merge_two=merge_two))
