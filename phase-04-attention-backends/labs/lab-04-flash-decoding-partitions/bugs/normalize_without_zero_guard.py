"""merge_partials divides by a denominator that can be zero.

When no key was seen (only identities) the merged summary is (-inf, 0.0, zeros) and the division
is 0/0 = NaN. Symptom: NaN instead of zeros from merge_partials of identities.
"""

CAUGHT_BY = [
    "test_merge_partials_of_no_keys_is_zeros",
]

EDIT = (
    "    if denom == 0.0:\n        return np.zeros_like(acc)\n",
    "",
)
