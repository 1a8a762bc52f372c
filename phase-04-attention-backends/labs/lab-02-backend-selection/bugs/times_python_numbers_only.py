"""The given time check takes only Python's int and float as a number of microseconds.

A matrix whose times are numpy scalars (``np.median`` of the measured runs, left as it came) is then
refused: "times_us['sdpa_flash'] = 20.0: a time must be a finite number" for a time that is one.
``np.float64`` slips through (it derives from ``float``); ``np.float32`` and ``np.int64`` do not.
Symptom: a ValueError for a valid matrix built with numpy.
"""

CAUGHT_BY = ["test_choose_measured_takes_numpy_times"]

SOURCE = "_checks.py"

EDIT = (
    "        if t is not None and (isinstance(t, bool) or not isinstance(t, numbers.Real) or not math.isfinite(t)\n",
    "        if t is not None and (isinstance(t, bool) or not isinstance(t, (int, float)) or not math.isfinite(t)\n",
)
