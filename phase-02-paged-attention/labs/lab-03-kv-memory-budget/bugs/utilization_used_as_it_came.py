"""The utilization is checked, but the number used is the one that came in, not the float the check returns.

``_check_utilization`` hands the utilization back as a Python float. Kept as it came, a numpy float32
turns ``total * u`` into float32 arithmetic (numpy casts the Python int to the numpy type): on a card of
85,029,158,912 bytes, 0.9 in float32 asks for 76,526,239,744 bytes instead of 76,526,240,994, and a
float16 product overflows to infinity.
Symptom: a budget 1,250 bytes short for ``np.float32(0.9)``; an OverflowError for ``np.float16(0.9)``.
"""

CAUGHT_BY = ["test_utilization_may_be_any_real_number"]

EDIT = (
    "    gpu_memory_utilization = _check_utilization(gpu_memory_utilization)\n",
    "    _check_utilization(gpu_memory_utilization)  # BUG: its float is dropped\n",
)
