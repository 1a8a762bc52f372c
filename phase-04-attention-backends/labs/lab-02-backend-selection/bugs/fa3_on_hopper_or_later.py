"""FlashAttention 3 assumed on any GPU of major 9 or more: ``major >= 9`` where the source picks per major.

get_flash_attn_version gives 3 on major 9 only, 4 on major 10, 2 elsewhere. Symptom: a B200
credited with FlashAttention 3's fp8 cache and its ALWAYS CUDA-graph support.
"""

CAUGHT_BY = ["test_fp8_cache_per_backend", "test_cudagraph_support_table", "test_fp8_cache_choices"]

EDIT = (
    '    return {9: 3, 10: 4}.get(capability[0], 2)\n',
    '    return 3 if capability[0] >= 9 else 2  # BUG: Blackwell is not Hopper\n',
)
