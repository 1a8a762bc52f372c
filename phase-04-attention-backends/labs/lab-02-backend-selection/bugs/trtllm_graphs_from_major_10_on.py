"""FlashInfer's UNIFORM_BATCH graphs given to every GPU of major 10 and up, not to 10.x alone.

The TRT-LLM decode kernels that let FlashInfer replay uniform batches run on major 10 only (the
same test as its attention sinks); 11.x and 12.x run FlashInfer's own decode. Symptom:
cudagraph_support("FLASHINFER", (12, 0)) says UNIFORM_BATCH, and a run with speculative decoding
keeps full decode graphs FlashInfer cannot replay there.
"""

CAUGHT_BY = ["test_cudagraph_support_table"]

EDIT = (
    '        return "UNIFORM_BATCH" if capability[0] == 10 else "UNIFORM_SINGLE_TOKEN_DECODE"\n',
    '        return "UNIFORM_BATCH" if capability[0] >= 10 else "UNIFORM_SINGLE_TOKEN_DECODE"  # BUG: major 10 only\n',
)
