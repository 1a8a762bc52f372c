"""Triton given the half-precision dtypes of the hand-written kernels: float32 refused.

v0.22.1's TritonAttentionBackend declares float32 too, and comes before FlexAttention. Symptom: a
float32 model with head size 128 goes to FLEX_ATTENTION instead of TRITON_ATTN.
"""

CAUGHT_BY = ["test_dense_defaults", "test_backend_problems_empty_when_it_can_run"]

EDIT = (
    'dtypes=DTYPES, kernel_block_sizes=(16,), fp8_formats=("e4m3", "e5m2")),\n',
    'dtypes=_HALF, kernel_block_sizes=(16,), fp8_formats=("e4m3", "e5m2")),  # BUG: no float32\n',
)
