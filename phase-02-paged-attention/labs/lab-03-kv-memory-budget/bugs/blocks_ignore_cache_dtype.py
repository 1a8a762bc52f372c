"""num_gpu_blocks sizes its pages with the model's dtype whatever cache_dtype it is given.

page_size_bytes is called without cache_dtype, so it falls back to "auto": an fp8 cache of a bf16
model is counted at 2 bytes per element and gets half the blocks it has room for. Symptom: 27904
blocks with an fp8 cache where 55808 are expected.
"""

CAUGHT_BY = ["test_num_gpu_blocks_llama_3_8b"]

EDIT = (
    "    return max(available_memory // page_size_bytes(config, block_size, cache_dtype) // num_layers, 0)\n",
    "    return max(available_memory // page_size_bytes(config, block_size) // num_layers, 0)  # cache_dtype dropped\n",
)
