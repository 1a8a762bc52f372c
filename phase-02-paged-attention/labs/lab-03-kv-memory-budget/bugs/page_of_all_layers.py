"""The page size covers every layer instead of one.

vLLM's page is one block of one layer; each layer has its own tensor of pages. Symptom: 2 MiB
instead of 64 KiB for Llama-3-8B, and a block count divided by the layers once more.
"""

CAUGHT_BY = [
    "test_page_size_bytes_is_one_block_of_one_layer",
    "test_num_gpu_blocks_llama_3_8b",
    "test_the_whole_budget_of_an_h100",
]

EDITS = [
    ("    _, num_kv_heads, head_dim = _kv_shape(config)\n",
     "    num_layers, num_kv_heads, head_dim = _kv_shape(config)\n"),
    ("    return 2 * block_size * num_kv_heads * head_dim * cache_dtype_bytes(config, cache_dtype)\n",
     "    return 2 * num_layers * block_size * num_kv_heads * head_dim * cache_dtype_bytes(config, cache_dtype)\n"),
]
