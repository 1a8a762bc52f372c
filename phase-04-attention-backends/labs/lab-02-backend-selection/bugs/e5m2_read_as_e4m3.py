"""Every fp8 cache taken for e4m3: the format of ``fp8_e5m2`` is not told apart.

Symptom: FLASH_ATTN on Hopper accepts an e5m2 cache, which its supports_kv_cache_dtype refuses
(fp8 and fp8_e4m3 only); the layer should go to FlashInfer.
"""

CAUGHT_BY = ["test_fp8_cache_per_backend", "test_fp8_cache_choices", "test_mla_with_no_backend"]

EDIT = (
    '        fmt = "e5m2" if kv_cache_dtype == "fp8_e5m2" else "e4m3"\n',
    '        fmt = "e4m3"  # BUG: fp8_e5m2 is another format\n',
)
