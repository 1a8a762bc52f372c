"""FlashAttention 4 assumed on every GPU from major 10 up.

get_flash_attn_version picks 4 on major 10 only; a 12.x card runs FlashAttention 2, which takes no
attention sinks. Symptom: FLASH_ATTN credited with sinks on (12, 0).
"""

CAUGHT_BY = ["test_sinks_per_backend", "test_sinks_choices"]

EDIT = (
    '    return {9: 3, 10: 4}.get(capability[0], 2)\n',
    '    return 3 if capability[0] == 9 else 4 if capability[0] >= 10 else 2  # BUG: 12.x is not Blackwell\n',
)
