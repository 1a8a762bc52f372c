"""A negative budget is clamped to 0 in available_kv_memory.

The function returns what is left, negative included: num_gpu_blocks turns a negative budget into 0
blocks, and vLLM then refuses to start with a message that says how much is missing. Clamped here,
the shortfall is lost. Symptom: 0 where -6,521,295,462 is expected.
"""

CAUGHT_BY = ["test_a_negative_budget_at_a_real_cards_magnitude"]

EDIT = (
    "    return requested - (weights_memory + peak_activation + non_torch_memory)\n",
    "    return max(0, requested - (weights_memory + peak_activation + non_torch_memory))\n",
)
