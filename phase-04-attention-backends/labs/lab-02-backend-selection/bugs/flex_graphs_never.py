"""FlexAttention's CUDA-graph support left at NEVER, the base class's default.

v0.22.1's FlexAttentionMetadataBuilder declares ALWAYS. Symptom: NEVER for FLEX_ATTENTION.

History: v0.10.1's builder declared nothing, and NEVER was its level.
"""

CAUGHT_BY = ["test_cudagraph_support_table"]

EDIT = (
    '        "FLEX_ATTENTION": "ALWAYS",  # FlexAttentionMetadataBuilder\n',
    '        "FLEX_ATTENTION": "NEVER",  # BUG: the base class default\n',
)
