"""FlashAttention credited with ALWAYS whatever its version.

Only FlashAttention 3 (Hopper) replays mixed prefill-decode batches in one full graph; the builder
declares UNIFORM_BATCH for versions 2 and 4. Symptom: ALWAYS on an A100 and a B200.
"""

CAUGHT_BY = ["test_cudagraph_support_table"]

EDIT = (
    '        return "ALWAYS" if _flash_attn_version(capability) == 3 else "UNIFORM_BATCH"\n',
    '        return "ALWAYS"  # BUG: only FlashAttention 3 is ALWAYS\n',
)
