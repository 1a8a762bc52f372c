"""The memory other processes hold (total - free) is subtracted from the budget as well.

The utilization is a share of the whole card; what other processes hold must fit in the rest of
the card, which the free-memory check ensures. Subtracting it again counts it twice and gives the
cache less than vLLM would. Symptom: 54 GiB where 54.5 are expected on a card with 0.5 GiB held
elsewhere.
"""

CAUGHT_BY = ["test_available_memory_hand_computed", "test_the_whole_budget_of_an_h100"]

EDIT = (
    "    return requested - (weights_memory + peak_activation + non_torch_memory)\n",
    "    used_elsewhere = total_memory - free_memory\n"
    "    return requested - used_elsewhere - (weights_memory + peak_activation + non_torch_memory)\n",
)
