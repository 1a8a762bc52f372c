"""FlashAttention 4 given to compute capability 11.x as well as 10.x.

get_flash_attn_version picks 4 on major 10 only; an 11.x GPU (which builds FlashAttention 4 for
its head sizes up to 512) still runs FlashAttention 2, which takes no attention sinks. Symptom:
FLASH_ATTN credited with sinks on (11, 0), and chosen there for a gpt-oss layer over Triton.
"""

CAUGHT_BY = ["test_sinks_per_backend", "test_sinks_choices"]

EDIT = (
    '    return {9: 3, 10: 4}.get(capability[0], 2)\n',
    '    return {9: 3, 10: 4, 11: 4}.get(capability[0], 2)  # BUG: version 4 runs on major 10 only\n',
)
