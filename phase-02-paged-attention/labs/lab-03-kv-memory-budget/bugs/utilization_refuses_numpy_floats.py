"""The given utilization check takes Python's int and float only, so a numpy float32 is refused.

``isinstance(np.float32(0.9), float)`` is False (numpy's float64 alone subclasses Python's float): a
utilization read out of a numpy array of settings is refused although it is a number in (0, 1].
``numbers.Real`` takes every real number, numpy's floats of every width included, and still leaves
bools out.
Symptom: ``available_kv_memory(..., np.float32(0.9), ...)`` raises "gpu_memory_utilization must be a
number in (0, 1], got np.float32(0.9)".
"""

CAUGHT_BY = ["test_utilization_may_be_any_real_number"]

SOURCE = "_config.py"

EDIT = (
    "    if isinstance(value, bool) or not isinstance(value, numbers.Real):\n",
    "    if isinstance(value, bool) or not isinstance(value, int | float):  # BUG: numpy's float32 is neither\n",
)
