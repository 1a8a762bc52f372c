"""The integer check asks for Python's int itself, so numpy settings and limits are refused.

``isinstance(np.int64(64), int)`` is False: a pool size, a block size or a ``max_new_tokens`` read out
of a numpy array (a sweep of settings, a table of limits) is refused although it is a whole number.
``numbers.Integral`` takes both, and still leaves bools out.
Symptom: ``Engine(model, num_gpu_blocks=np.int64(64))`` raises "num_gpu_blocks must be an int >= 2, got
np.int64(64)".
"""

SOURCE = "labkit/integers.py"  # the integer check the labs share, which the given _engine_base.py calls

CAUGHT_BY = ["test_numpy_integers_are_integers_and_a_bool_is_no_token_id"]

EDIT = (
    "    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or (low is not None and value < low):\n",
    "    if isinstance(value, bool) or not isinstance(value, int) or (low is not None and value < low):  # BUG\n",
)
