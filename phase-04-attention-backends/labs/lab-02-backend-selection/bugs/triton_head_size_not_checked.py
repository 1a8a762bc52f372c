"""Triton's head-size floor left out: its supports_head_size wants at least 32.

Symptom: TRITON_ATTN chosen for head sizes 16 and 20, where FlexAttention is the backend that
takes them.
"""

CAUGHT_BY = ["test_backend_problems_name_the_limit", "test_dense_defaults"]

EDIT = (
    '        return f"head size {head_size} is below 32" if head_size < 32 else None  # supports_head_size\n',
    '        return None  # BUG: no floor\n',
)
