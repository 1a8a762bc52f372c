"""An fp8 KV cache taken for readable by every backend: each backend's declared formats ignored.

Symptom: FlexAttention and FlashAttention MLA accept fp8 caches they do not read, and no MLA
layer is ever refused an e5m2 cache.
"""

CAUGHT_BY = ["test_fp8_cache_per_backend", "test_fp8_cache_with_no_backend", "test_mla_with_no_backend"]

EDIT = (
    '    return LIMITS[backend].fp8_formats\n',
    '    return ("e4m3", "e5m2")  # BUG: every backend reads every format\n',
)
