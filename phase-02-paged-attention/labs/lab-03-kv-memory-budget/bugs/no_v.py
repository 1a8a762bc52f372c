"""Only the keys are counted: the factor 2 for K and V is missing.

Symptom: every size is half of what it should be (64 KiB per token for Llama-3-8B instead of
128), and the engine would promise twice the blocks the memory holds.
"""

CAUGHT_BY = [
    "test_llama_3_8b_takes_128_kib_per_token",
    "test_opt_125m_has_no_kv_heads_key",
    "test_mha_and_gqa",
    "test_explicit_head_dim_wins",
    "test_cache_dtype_scales_the_bytes",
]

EDIT = (
    '    return 2 * num_layers * num_kv_heads * head_dim * cache_dtype_bytes(config, cache_dtype)\n',
    '    return num_layers * num_kv_heads * head_dim * cache_dtype_bytes(config, cache_dtype)\n',
)
