"""The request is computed in GiB rounded to two decimals, as vLLM logs it, then turned back into bytes.

"Requested 71.27 GiB" is fine in a log line; as a budget it is off by up to 5 MiB (half a hundredth
of a GiB), in either direction. Symptom: on round numbers (80 GiB at 0.9) nothing shows; on a real
card's total the budget is millions of bytes off.
"""

CAUGHT_BY = ["test_the_exact_edge_at_a_real_cards_magnitude", "test_the_whole_budget_of_an_h100"]

EDIT = (
    "    requested = math.ceil(total_memory * gpu_memory_utilization)  # whole bytes, rounded up as vLLM does\n",
    "    requested = int(round(total_memory / 2**30 * gpu_memory_utilization, 2) * 2**30)  # GiB, as logged\n",
)
