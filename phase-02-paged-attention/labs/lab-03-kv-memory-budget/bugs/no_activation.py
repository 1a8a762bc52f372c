"""The peak activation of the profiling run is not subtracted.

Symptom: the cache fills the budget to the brim, and the first large batch (a prefill of
max_num_batched_tokens tokens) runs out of memory in the middle of serving.
"""

CAUGHT_BY = ["test_available_memory_hand_computed", "test_the_whole_budget_of_an_h100"]

EDIT = (
    '    return requested - (weights_memory + peak_activation + non_torch_memory)\n',
    '    return requested - (weights_memory + non_torch_memory)\n',
)
