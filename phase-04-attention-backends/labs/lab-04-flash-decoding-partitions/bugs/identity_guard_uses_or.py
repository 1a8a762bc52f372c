"""An identity guard with ``or`` instead of ``and``: the merge returns the identity when
EITHER side is empty, where it should only when both are.

The guard against exp(-inf - (-inf)) is needed only when both maxima are -inf; with ``or`` an
empty side swallows the real one, so one empty partition erases everything merged with it.
Symptom: merge(identity, a) is the identity instead of a; merge_partials with identities in
the list loses the summaries merged before and after them.
"""

import numpy as np

from labkit.bugs import solution_with

CAUGHT_BY = [
    "test_merge_with_the_identity_changes_nothing",
    "test_merge_partials_matches_dense_attention",
]


def merge_two(a, b):
    m_a, denom_a, acc_a = _as_summary(a, "merge_two: a")  # noqa: F821 (from the solution, below)
    m_b, denom_b, acc_b = _as_summary(b, "merge_two: b")  # noqa: F821
    if acc_a.shape != acc_b.shape:
        raise ValueError(f"merge_two: acc shapes differ, {acc_a.shape} and {acc_b.shape}")
    if m_a == -np.inf or m_b == -np.inf:  # BUG: should be "and" (or: max(m_a, m_b) == -inf)
        return -np.inf, 0.0, np.zeros_like(acc_a)
    m = max(m_a, m_b)
    scale_a = np.exp(m_a - m)
    scale_b = np.exp(m_b - m)
    return m, denom_a * scale_a + denom_b * scale_b, acc_a * scale_a + acc_b * scale_b


globals().update(solution_with(__file__, merge_two=merge_two))
