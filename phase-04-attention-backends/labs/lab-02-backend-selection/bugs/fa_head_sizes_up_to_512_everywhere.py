"""FlashAttention credited with head sizes up to 512 on every GPU.

Only FlashAttention 4 goes past 256, and v0.22.1 builds it for 9.x, 10.x and 11.x. Symptom:
FLASH_ATTN chosen on an A100 for head size 320, which FlashAttention 2 cannot run.
"""

CAUGHT_BY = ["test_backend_problems_name_the_limit", "test_dense_defaults"]

EDIT = (
    '        largest = 512 if capability[0] in (9, 10, 11) else 256\n',
    '        largest = 512  # BUG: FlashAttention 4 assumed everywhere\n',
)
