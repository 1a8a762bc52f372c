"""The block count is taken through a float: ``int(available_memory / page_size / num_layers)``.

Right at every size a card has today, wrong past 2**53 bytes, where the byte count itself is no
float: 2**60 - 1 bytes become 2**60, and the count is 2**39 blocks where 2**39 - 1 fit. Floor
division of integers has no such limit. Symptom: num_gpu_blocks(2**60 - 1, Llama-3-8B, 16) is one
block too many.
"""

CAUGHT_BY = ["test_num_gpu_blocks_llama_3_8b"]

EDIT = (
    "    return max(available_memory // page_size_bytes(config, block_size, cache_dtype) // num_layers, 0)\n",
    "    return max(int(available_memory / page_size_bytes(config, block_size, cache_dtype) / num_layers), 0)\n",
)
