"""FlashAttention credited with ALWAYS whatever its version; FA2 (every GPU but Hopper) is
UNIFORM_BATCH.

Symptom: FULL graphs kept for mixed prefill/decode batches on an A100, which FA2's packed-GQA
decode path cannot replay.
"""

CAUGHT_BY = [
    "test_cudagraph_support_table",
    "test_resolve_cudagraph_mode",
]

EDIT = (
    '        return "ALWAYS" if _has_fa3(capability) else "UNIFORM_BATCH"\n',
    '        return "ALWAYS"  # BUG: FA2 is UNIFORM_BATCH\n',
)
