"""No seq_len == 0 case: the loop runs zero times and the function returns acc / denom = 0/0.

Symptom: right for every non-empty sequence; NaN (with a RuntimeWarning) for a request with
nothing cached yet, where zeros are expected.
"""

CAUGHT_BY = ["test_empty_sequence_gives_zeros"]

EDIT = (
    "    if seq_len == 0:\n        return acc  # nothing attended: zeros, not 0/0\n",
    "",
)
