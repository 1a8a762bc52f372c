"""The block count forgets that a block exists in every layer.

Symptom: 32 times too many blocks for Llama-3-8B: the budget is counted once per layer.
"""

CAUGHT_BY = [
    "test_num_gpu_blocks_llama_3_8b",
    "test_num_gpu_blocks_is_never_negative",
    "test_the_whole_budget_of_an_h100",
]

EDIT = (
    '    return max(available_memory // page_size_bytes(config, block_size, cache_dtype) // num_layers, 0)\n',
    '    return max(available_memory // page_size_bytes(config, block_size, cache_dtype), 0)\n',
)
