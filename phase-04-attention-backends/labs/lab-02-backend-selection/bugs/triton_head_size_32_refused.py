"""Triton's head-size rule read as "above 32": ``<=`` where TritonAttentionBackend says ``< 32``.

Symptom: head size 32 refused by TRITON_ATTN.
"""

CAUGHT_BY = ["test_backend_problems_empty_when_it_can_run"]

EDIT = (
    '        return f"head size {head_size} is below 32" if head_size < 32 else None  # supports_head_size\n',
    '        return f"head size {head_size} is below 32" if head_size <= 32 else None  # BUG: 32 refused\n',
)
