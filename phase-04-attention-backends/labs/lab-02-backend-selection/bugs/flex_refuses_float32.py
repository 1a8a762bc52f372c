"""FlexAttention given the half-precision dtypes of the hand-written kernels: float32 refused.

Symptom: a float32 layer with head size 16 or 20, which only FlexAttention takes, finds no
backend.
"""

CAUGHT_BY = ["test_backend_problems_empty_when_it_can_run", "test_dense_defaults"]

EDIT = (
    '    "FLEX_ATTENTION": _Limits(mla=False, dtypes=DTYPES, kernel_block_sizes=(16,)),\n',
    '    "FLEX_ATTENTION": _Limits(mla=False, dtypes=_HALF, kernel_block_sizes=(16,)),  # BUG: no float32\n',
)
