"""FlashInfer credited with UNIFORM_BATCH on every GPU.

Its builder declares UNIFORM_BATCH only when TRT-LLM attention serves the decodes (a 10.x GPU),
and UNIFORM_SINGLE_TOKEN_DECODE otherwise. Symptom: UNIFORM_BATCH on an H100, where speculative
decoding would then be captured in full graphs FlashInfer cannot replay.
"""

CAUGHT_BY = ["test_cudagraph_support_table"]

EDIT = (
    '        return "UNIFORM_BATCH" if capability[0] == 10 else "UNIFORM_SINGLE_TOKEN_DECODE"\n',
    '        return "UNIFORM_BATCH"  # BUG: TRT-LLM attention is Blackwell only\n',
)
