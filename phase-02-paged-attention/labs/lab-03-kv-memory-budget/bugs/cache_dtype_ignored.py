"""The cache dtype is ignored: the cache is always counted in the model's dtype.

Symptom: right for "auto", and for any cache dtype of the model's size; an fp8 cache of a bf16
model still costs 2 bytes per element, so the engine would get half the blocks it can hold.
"""

CAUGHT_BY = [
    "test_cache_dtype_bytes",
    "test_cache_dtype_scales_the_bytes",
    "test_page_size_bytes_is_one_block_of_one_layer",
    "test_num_gpu_blocks_llama_3_8b",
]

EDIT = (
    '    return _dtype_bytes(_model_dtype(config) if cache_dtype == "auto" else cache_dtype)\n',
    '    return _dtype_bytes(_model_dtype(config))\n',
)
