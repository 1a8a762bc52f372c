"""No special case for seq_len == 0: the softmax runs over an empty row.

Symptom: fine for every non-empty sequence; a request with nothing cached yet crashes (numpy:
"zero-size array to reduction operation maximum") where it should return zeros. Kernels that
skip the max instead return 0/0 = NaN.
"""

CAUGHT_BY = ["test_empty_sequence_gives_zeros"]

EDIT = (
    "    if seq_len == 0:\n        return out  # nothing to attend to: zeros, not 0/0 = NaN\n",
    "",
)
