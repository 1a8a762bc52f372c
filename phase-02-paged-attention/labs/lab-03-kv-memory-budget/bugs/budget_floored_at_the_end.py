"""The budget is computed in floating point and rounded down at the end, math.floor(total * u - held).

Rounding belongs to the request, once: ceil(total * utilization) bytes, then integer subtraction.
Floored at the end, the budget is a byte short whenever the product has a fraction, on a positive
budget and a negative one alike. Symptom: -6,521,295,463 where -6,521,295,462 is expected at 0.3 of
85,029,158,912 bytes with 32,030,043,136 held.
"""

CAUGHT_BY = ["test_a_negative_budget_at_a_real_cards_magnitude", "test_the_exact_edge_at_a_real_cards_magnitude"]

EDIT = (
    "    return requested - (weights_memory + peak_activation + non_torch_memory)\n",
    "    return math.floor(total_memory * gpu_memory_utilization - (weights_memory + peak_activation\n"
    "                                                              + non_torch_memory))\n",
)
