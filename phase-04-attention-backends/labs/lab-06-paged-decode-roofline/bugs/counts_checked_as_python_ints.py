"""The integer check asks for Python's int itself, so a numpy split count or partition size is refused.

``isinstance(np.int64(3), int)`` is False: a count read out of a numpy array (a table of tuned split
counts, a partition size from a config) is refused although it is a whole number, and the caller
must wrap every count in ``int(...)``. ``numbers.Integral`` takes both, and still leaves bools out.
Symptom: ``paged_decode(..., num_splits=np.int64(3))`` raises "paged_decode: num_splits must be None or
an int >= 1, got np.int64(3)".
"""

SOURCE = "labkit/integers.py"  # the integer check the labs share, which the given _host.py calls

CAUGHT_BY = ["test_counts_may_be_numpy_integers"]

EDIT = (
    "    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or (low is not None and value < low):\n",
    "    if isinstance(value, bool) or not isinstance(value, int) or (low is not None and value < low):  # BUG\n",
)
