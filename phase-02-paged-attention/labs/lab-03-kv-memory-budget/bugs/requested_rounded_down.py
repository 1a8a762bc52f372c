"""The requested memory is rounded down (int()) instead of up.

vLLM's request_memory computes math.ceil(total_memory * gpu_memory_utilization). int() drops the
fraction and the budget is one byte short whenever the product is not whole. Symptom: 58878163353
bytes available on the H100's numbers where 58878163354 are expected.

History: vLLM v0.10.1's worker rounded down with int().
"""

CAUGHT_BY = ["test_the_whole_budget_of_an_h100", "test_requested_memory_is_rounded_up"]

EDIT = (
    "    requested = math.ceil(total_memory * gpu_memory_utilization)  # whole bytes, rounded up as vLLM does\n",
    "    requested = int(total_memory * gpu_memory_utilization)  # rounded down\n",
)
