"""The checks ask for Python's int itself, and refuse numpy integers.

``isinstance(np.int64(10), int)`` is False: a length read from a numpy array, or computed from
one, is refused although it is a whole number. ``numbers.Integral`` takes both.
Symptom: "seq_len must be an int, got np.int64(10)" for a valid call.
"""

SOURCE = "_checks.py"  # the given input checks

CAUGHT_BY = ["test_takes_numpy_integers"]

EDIT = (
    "        if isinstance(n, bool) or not isinstance(n, numbers.Integral):  # 9.0 would reach range() as a float\n",
    "        if isinstance(n, bool) or not isinstance(n, int):  # BUG: numpy integers are not int\n",
)
