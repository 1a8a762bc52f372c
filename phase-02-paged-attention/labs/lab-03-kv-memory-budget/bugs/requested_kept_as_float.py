"""The requested memory is kept as a float: the budget comes back as a float of bytes.

total * utilization is a float; without rounding to a whole byte every byte count downstream is a float too, with a
fraction of a byte, and 76968728985.6 bytes is no size a GPU allocates. Symptom: available_kv_memory
returns a float (58878163353.6 on the H100's numbers).
"""

CAUGHT_BY = ["test_available_memory_hand_computed", "test_the_whole_budget_of_an_h100"]

EDIT = (
    "    requested = math.ceil(total_memory * gpu_memory_utilization)  # whole bytes, rounded up as vLLM does\n",
    "    requested = total_memory * gpu_memory_utilization  # a float of bytes\n",
)
