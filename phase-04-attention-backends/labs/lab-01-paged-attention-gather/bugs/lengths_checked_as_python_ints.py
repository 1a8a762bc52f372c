"""The checks ask for Python's int itself, and refuse numpy integers.

``isinstance(np.int64(10), int)`` is False: a length read from a numpy array, or computed from
one, is refused although it is a whole number. ``numbers.Integral`` takes both.
Symptom: "seq_len must be an int, got np.int64(10)" for a valid call.
"""

SOURCE = "labkit/integers.py"  # the integer check the labs share

CAUGHT_BY = ["test_takes_numpy_integers"]

EDIT = (
    "    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or (low is not None and value < low):\n",
    "    if isinstance(value, bool) or not isinstance(value, int) or (low is not None and value < low):  # BUG\n",
)
