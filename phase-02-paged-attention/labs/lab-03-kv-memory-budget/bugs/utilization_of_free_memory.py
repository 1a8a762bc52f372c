"""The utilization is applied to the free memory instead of the total.

vLLM's ``gpu_memory_utilization`` is a share of the whole card: ``requested = total * util``.
Symptom: right on an idle card, a smaller budget as soon as anything else holds memory.
"""

CAUGHT_BY = ["test_available_memory_hand_computed"]

EDIT = (
    "    requested = math.ceil(total_memory * gpu_memory_utilization)  # whole bytes, rounded up as vLLM does\n",
    '    requested = math.ceil(free_memory * gpu_memory_utilization)\n',
)
