"""available_kv_memory compares gpu_memory_utilization with 0 and 1 before knowing it is a number.

The given ``_check_utilization`` is not called. Symptom: a utilization of "0.9" (read from a command
line) raises TypeError from inside the comparison instead of a ValueError naming
gpu_memory_utilization, and True is taken as 1.0.
"""

CAUGHT_BY = ["test_every_bad_input_is_refused_by_name"]

EDIT = (
    "    gpu_memory_utilization = _check_utilization(gpu_memory_utilization)\n",
    "",
)
