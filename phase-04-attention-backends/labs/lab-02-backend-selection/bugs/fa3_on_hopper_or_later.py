"""FlashAttention 3 assumed on any GPU of major 9 or more: ``major >= 9`` where the source tests
``major == 9``.

get_flash_attn_version picks FA3 only on Hopper; Blackwell runs FA2, which has no fp8 cache, no
attention sinks and weaker CUDA-graph support. Symptom: FLASH_ATTN offered for an fp8 cache or
sinks on a B200, where vLLM fails when it builds the layer.
"""

CAUGHT_BY = [
    "test_fp8_cache_per_backend",
    "test_sinks_per_backend",
    "test_cudagraph_support_table",
    "test_fp8_cache_with_no_backend",
]

EDIT = (
    '    return capability[0] == 9\n',
    '    return capability[0] >= 9  # BUG: Blackwell is not Hopper\n',
)
