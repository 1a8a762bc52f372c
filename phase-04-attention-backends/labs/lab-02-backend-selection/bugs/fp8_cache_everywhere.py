"""An fp8 KV cache taken for readable by every backend: the fallback for "no fp8 formats" says
both formats.

FlexAttention and the three MLA backends of v0.10.1 raise for a quantized cache. Symptom: an fp8
cache with an odd head size gets FLEX_ATTENTION, and DeepSeek with an fp8 cache gets FLASHMLA,
where vLLM fails when it builds the layer.
"""

CAUGHT_BY = [
    "test_fp8_cache_per_backend",
    "test_fp8_cache_with_no_backend",
    "test_mla_with_no_backend",
    "test_fp8_cache_choices",
]

EDIT = (
    '    return ()  # FlexAttentionImpl and every MLA Impl raise for a quantized cache\n',
    '    return ("e4m3", "e5m2")  # BUG: FlexAttention and MLA read no fp8 cache in v0.10.1\n',
)
