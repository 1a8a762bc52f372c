"""Every fp8 cache taken for e4m3: the format of ``fp8_e5m2`` is not told apart.

FlashAttention's fp8 path and the Triton backend read e4m3 only; an e5m2 cache is another
number format (5 exponent bits, 2 mantissa bits). Symptom: fp8_e5m2 accepted on FLASH_ATTN and
TRITON_ATTN_VLLM_V1, which would read every value wrong.
"""

CAUGHT_BY = [
    "test_fp8_cache_per_backend",
    "test_fp8_cache_with_no_backend",
]

EDIT = (
    '        fmt = "e5m2" if kv_cache_dtype == "fp8_e5m2" else "e4m3"\n',
    '        fmt = "e4m3"  # BUG: fp8_e5m2 is another format\n',
)
