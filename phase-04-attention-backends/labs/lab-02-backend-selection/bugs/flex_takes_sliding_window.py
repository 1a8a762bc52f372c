"""FlexAttention credited with a sliding window; its v0.10.1 Impl raises "FlexAttention does not
support sliding window yet".

Symptom: a sliding-window model in float32, or with head size 80, gets FLEX_ATTENTION and fails
when the layer is built.
"""

CAUGHT_BY = [
    "test_sliding_window_per_backend",
    "test_sliding_window_with_no_backend",
    "test_override_that_cannot_run_is_rejected",
]

EDIT = (
    '    "FLEX_ATTENTION": _Limits(mla=False, dtypes=DTYPES, head_sizes=None, sliding_window=False),\n',
    '    "FLEX_ATTENTION": _Limits(mla=False, dtypes=DTYPES, head_sizes=None),  # BUG: no window in v0.10.1\n',
)
