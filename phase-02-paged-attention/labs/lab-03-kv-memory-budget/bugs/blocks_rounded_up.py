"""The block count is rounded up: the last, partial block is promised too.

Symptom: one block more than fits, whenever the budget is not a whole number of blocks.
"""

CAUGHT_BY = ["test_num_gpu_blocks_llama_3_8b"]

EDIT = (
    '    return max(available_memory // page_size_bytes(config, block_size, cache_dtype) // num_layers, 0)\n',
    '    return max(-(-available_memory // (page_size_bytes(config, block_size, cache_dtype) * num_layers)), 0)\n',
)
