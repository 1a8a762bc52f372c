"""Memory taken outside torch (CUDA context growth, NCCL and cuBLAS buffers) is not subtracted.

torch's own statistics do not see it; vLLM measures it from the device's used memory. Symptom:
a budget a few hundred MiB too large.
"""

CAUGHT_BY = ["test_available_memory_hand_computed", "test_the_whole_budget_of_an_h100"]

EDIT = (
    '    return requested - (weights_memory + peak_activation + non_torch_memory)\n',
    '    return requested - (weights_memory + peak_activation)\n',
)
