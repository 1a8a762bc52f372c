"""The shared integer check asks for a Python int (``isinstance(value, int)``), so numpy integers are refused.

A numpy integer (a seq_len read out of an array of lengths, ``np.int64(2000)``) is an integer, but
not an ``int``: every function that checks its sizes then raises "must be an integer" for a valid
integer. ``numbers.Integral`` takes both (and a bool is refused separately).
Symptom: ``warp_blocks(lens[0], ...)`` raises ValueError: seq_len must be an int, got np.int64(2000).
"""

CAUGHT_BY = ["test_numpy_integers_are_integers"]

SOURCE = "labkit/integers.py"  # the integer check the labs share, which the given checks call

EDIT = (
    "    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or (low is not None and value < low):\n",
    "    if isinstance(value, bool) or not isinstance(value, int) or (low is not None and value < low):\n",
)
