"""The given integer check asks for a Python int (``isinstance(value, int)``), so numpy integers are refused.

A numpy integer (a seq_len read out of an array of lengths, ``np.int64(2000)``) is an integer, but
not an ``int``: every function that checks its sizes then raises "must be an integer" for a valid
integer. ``numbers.Integral`` takes both (and a bool is refused separately).
Symptom: ``warp_blocks(lens[0], ...)`` raises ValueError: seq_len=np.int64(2000) must be an integer.
"""

CAUGHT_BY = ["test_numpy_integers_are_integers"]

SOURCE = "_walkthrough_checks.py"  # the given input checks

EDIT = (
    "    if isinstance(value, bool) or not isinstance(value, numbers.Integral):\n",
    "    if isinstance(value, bool) or not isinstance(value, int):\n",
)
