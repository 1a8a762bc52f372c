"""Dividing by a denominator that can be zero: merge_partials returns acc / denom with no
case for denom = 0.

When no key was seen (only identities) the merged summary is (-inf, 0.0, zeros) and the
division is 0/0 = NaN. Symptom: NaN instead of zeros from merge_partials of identities, and
a crash on an empty list.
"""

import numpy as np

from labkit.bugs import solution_with

CAUGHT_BY = [
    "test_merge_partials_of_no_keys_is_zeros",
]


def merge_partials(partials):
    partials = list(partials)
    m, denom, acc = _as_summary(partials[0], "merge_partials: partials[0]")  # noqa: F821
    for summary in partials[1:]:
        m, denom, acc = merge_two((m, denom, acc), summary)  # noqa: F821 (from the solution, below)
    return acc / np.float64(denom)  # BUG: 0/0 = NaN when there were no keys


globals().update(solution_with(__file__, merge_partials=merge_partials))
