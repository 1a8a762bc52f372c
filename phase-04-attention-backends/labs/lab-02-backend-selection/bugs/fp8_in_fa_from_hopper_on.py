"""FlashAttention's fp8 cache granted from FlashAttention 3 on, 4 included.

supports_kv_cache_dtype asks for version 3 exactly (and a 9.x GPU). Symptom: a B200 reads fp8 on
FLASH_ATTN, and a layer with head size 96 and an fp8 cache goes there instead of Triton.
"""

CAUGHT_BY = ["test_fp8_cache_per_backend", "test_fp8_cache_choices"]

EDIT = (
    '        return ("e4m3",) if _flash_attn_version(capability) == 3 else ()\n',
    '        return ("e4m3",) if _flash_attn_version(capability) >= 3 else ()  # BUG: version 4 has no fp8 here\n',
)
