"""The number of query heads is used where the number of KV heads belongs.

Symptom: right for multi-head models (OPT, Llama 2), four times too large for Llama-3-8B (512 KiB
per token), seven times for Qwen2.5-7B: grouped-query attention's saving disappears.
"""

CAUGHT_BY = [
    "test_llama_3_8b_takes_128_kib_per_token",
    "test_mha_and_gqa",
    "test_page_size_bytes_is_one_block_of_one_layer",
    "test_num_gpu_blocks_llama_3_8b",
]

EDIT = (
    '    num_kv_heads = _config_int(config, "num_key_value_heads", default=num_heads)\n',
    '    num_kv_heads = num_heads\n',
)
