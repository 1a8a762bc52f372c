"""The block count is rounded to the nearest whole block instead of down.

Python's round() rounds half to even, so half a block more still gives 27904 blocks; three quarters
of a block more promise a block that does not fit. Symptom: 27905 blocks in 54.5 GiB + 1.5 MiB,
where a block of Llama-3-8B is 2 MiB.
"""

CAUGHT_BY = ["test_num_gpu_blocks_llama_3_8b", "test_num_gpu_blocks_is_never_negative"]

EDIT = (
    "    return max(available_memory // page_size_bytes(config, block_size, cache_dtype) // num_layers, 0)\n",
    "    return max(round(available_memory / page_size_bytes(config, block_size, cache_dtype) / num_layers), 0)\n",
)
