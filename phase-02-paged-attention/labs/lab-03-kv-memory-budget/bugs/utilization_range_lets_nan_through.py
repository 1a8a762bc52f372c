"""The utilization's range is checked as ``u <= 0 or u > 1``, which a NaN passes.

Every comparison with NaN is false, so NaN is neither at most 0 nor above 1; ``not 0 < u <= 1``
refuses it. The NaN then reaches ``math.ceil(total_memory * u)``, which raises its own ValueError
("cannot convert float NaN to integer"): nothing in it names gpu_memory_utilization. Symptom:
available_kv_memory(..., float("nan"), ...) fails with a message that does not say which argument.
"""

CAUGHT_BY = ["test_every_bad_input_is_refused_by_name"]

EDIT = (
    "    if not 0 < gpu_memory_utilization <= 1:\n",
    "    if gpu_memory_utilization <= 0 or gpu_memory_utilization > 1:\n",
)
