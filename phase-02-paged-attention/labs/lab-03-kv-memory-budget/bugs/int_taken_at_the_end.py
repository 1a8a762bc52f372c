"""The budget is computed in floating point and made an integer by int() at the end.

int() rounds toward zero. For a positive budget that is the floor, the same as rounding the
request down first, so every positive case passes. A negative budget (the model does not fit)
has its fraction rounded up: -6,521,295,462.4 becomes -6,521,295,462 where rounding the request
down gives -6,521,295,463. Symptom: a negative budget one byte too large at a real card's
magnitude.
"""

CAUGHT_BY = ["test_a_negative_budget_at_a_real_cards_magnitude"]

EDIT = (
    "    return requested - (weights_memory + peak_activation + non_torch_memory)\n",
    "    return int(total_memory * gpu_memory_utilization - (weights_memory + peak_activation + non_torch_memory))\n",
)
