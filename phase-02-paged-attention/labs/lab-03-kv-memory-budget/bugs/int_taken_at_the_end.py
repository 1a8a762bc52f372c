"""The budget is computed in floating point and made an integer by int() at the end.

Rounding belongs to the request, once, upward: ceil(total * utilization) bytes, then integer
subtraction. int() of the float budget rounds toward zero instead: on a positive budget whose
product has a fraction (a real card, most utilizations) that is a byte short. Symptom:
58,435,677,388 where 58,435,677,389 is expected at 0.9 of 85,029,158,912 bytes.
"""

CAUGHT_BY = ["test_the_exact_edge_at_a_real_cards_magnitude"]

EDIT = (
    "    return requested - (weights_memory + peak_activation + non_torch_memory)\n",
    "    return int(total_memory * gpu_memory_utilization - (weights_memory + peak_activation + non_torch_memory))\n",
)
