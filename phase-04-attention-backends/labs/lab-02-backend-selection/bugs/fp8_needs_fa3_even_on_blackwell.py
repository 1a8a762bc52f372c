"""The engine's gate asks every GPU for FlashAttention 3 before an fp8 cache, SM 10.0 included.

On SM 10.0, ``is_kv_cache_dtype_supported`` accepts an fp8 cache outright (FlashInfer and the
TRT-LLM kernels read it). Reading the rule as "fp8 needs FA3" refuses a B200 with an fp8 cache,
which v0.10.1 serves with FLASHINFER.
"""

CAUGHT_BY = ["test_v1_engine_gate", "test_fp8_cache_choices"]

EDIT = (
    '    if kv_cache_dtype != "auto" and capability != (10, 0):\n',
    '    if kv_cache_dtype != "auto":  # BUG: SM 10.0 refused too\n',
)
