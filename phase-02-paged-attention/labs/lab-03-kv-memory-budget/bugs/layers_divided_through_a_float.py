"""num_gpu_blocks divides the pages by the layers with ``/``: ``int(available // page_size / num_layers)``.

The pages are counted in integers, but the last step goes through a float, which holds integers
exactly only up to 2**53: (2**80 - 1) // 64 KiB is 2**64 - 1 pages, which the float rounds to 2**64,
and divided by 32 layers that is 2**59 blocks where 2**59 - 1 fit. Symptom:
num_gpu_blocks(2**80 - 1, Llama-3-8B, 16) is one block too many.
"""

CAUGHT_BY = ["test_num_gpu_blocks_llama_3_8b"]

EDIT = (
    "    return max(available_memory // page_size_bytes(config, block_size, cache_dtype) // num_layers, 0)\n",
    "    return max(int(available_memory // page_size_bytes(config, block_size, cache_dtype) / num_layers), 0)\n",
)
