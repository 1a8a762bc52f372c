"""FlexAttention credited with any block size.

v0.22.1's FlexAttentionBackend declares MultipleOf(16) as its kernel block size. Symptom: an
8-token or 24-token block size goes to FLEX_ATTENTION instead of being refused.

History: v0.10.1's FlexAttention took any block size.
"""

CAUGHT_BY = ["test_backend_problems_name_the_limit", "test_block_size_with_no_backend"]

EDIT = (
    '    "FLEX_ATTENTION": _Limits(mla=False, dtypes=DTYPES, kernel_block_sizes=(16,)),\n',
    '    "FLEX_ATTENTION": _Limits(mla=False, dtypes=DTYPES, kernel_block_sizes=(1,)),  # BUG: any block size\n',
)
