"""The utilization scales what is left after the weights and activations, not the card.

Symptom: a budget that grows with the weights (0.9 * (80 - 17.5) = 56.25 GiB instead of 54.5),
and the engine takes more of the card than it was allowed.
"""

CAUGHT_BY = ["test_available_memory_hand_computed", "test_the_whole_budget_of_an_h100"]

EDIT = (
    '    return requested - (weights_memory + peak_activation + non_torch_memory)\n',
    '    return int((total_memory - (weights_memory + peak_activation + non_torch_memory)) * gpu_memory_utilization)\n',
)
