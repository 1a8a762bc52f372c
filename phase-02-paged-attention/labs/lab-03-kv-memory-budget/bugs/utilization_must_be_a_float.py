"""The utilization is checked to be a float, which refuses the int 1.

The docstring takes a number in (0, 1]: ``gpu_memory_utilization=1`` is the whole card, as 1.0 is.
A check of its own, ``isinstance(u, float)``, in place of the given ``_check_utilization`` (any real
number, never a bool) refuses it. Symptom: available_kv_memory(48 GiB, 48 GiB, 1, ...) raises
"gpu_memory_utilization must be a float" where 1.0 gives 37 GiB.
"""

CAUGHT_BY = ["test_free_memory_that_exactly_covers_the_request_is_enough"]

EDIT = (
    "    gpu_memory_utilization = _check_utilization(gpu_memory_utilization)\n",
    "    if not isinstance(gpu_memory_utilization, float):\n"
    "        raise ValueError(f\"gpu_memory_utilization must be a float, got {gpu_memory_utilization!r}\")\n",
)
