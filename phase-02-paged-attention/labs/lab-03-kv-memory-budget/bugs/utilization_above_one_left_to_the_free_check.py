"""The utilization check accepts values up to 2, leaving those above 1 to the free-memory check.

That check refuses them, with advice (free the GPU) that cannot help: no card has more than its
total. Symptom: gpu_memory_utilization 1.5 gets "lower it or free the GPU" instead of "must be in
(0, 1]".
"""

CAUGHT_BY = ["test_every_bad_input_is_refused_by_name"]

EDIT = (
    "    if not 0 < gpu_memory_utilization <= 1:\n",
    "    if not 0 < gpu_memory_utilization <= 2:\n",
)
