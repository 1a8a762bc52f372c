"""FlashAttention's 8.0 floor left out.

Symptom: FLASH_ATTN chosen on a T4 (7.5), whose tensor cores FlashAttention 2 does not support;
FlashInfer is the first backend that runs there.
"""

CAUGHT_BY = ["test_backend_problems_name_the_limit", "test_dense_defaults"]

EDIT = (
    '    if backend == "FLASH_ATTN" and capability < (8, 0):\n',
    '    if False:  # BUG: no floor for FlashAttention\n',
)
