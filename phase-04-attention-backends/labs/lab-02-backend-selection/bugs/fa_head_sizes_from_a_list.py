"""FlashAttention's head sizes taken from a list (32, 64, 96, ..., 256) instead of its rule.

v0.22.1's FlashAttentionBackend.supports_head_size takes any multiple of 8 up to 256 (512 where
FlashAttention 4 is built). Symptom: head sizes 72 and 80 refused by FLASH_ATTN and sent to
another backend.
"""

CAUGHT_BY = ["test_backend_problems_empty_when_it_can_run", "test_dense_defaults"]

EDIT = (
    '        if head_size % 8 or head_size > largest:\n',
    '        if head_size not in (32, 64, 96, 128, 160, 192, 224, 256):  # BUG: a list, not the rule\n',
)
