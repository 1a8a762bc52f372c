"""The speculative-decoding check of initialize_cudagraph_capture skipped.

Decode batches with speculative tokens have several query tokens per request; a backend below
UNIFORM_BATCH cannot replay full decode graphs for them. Symptom: FlashInfer keeps
FULL_AND_PIECEWISE with spec decode.
"""

CAUGHT_BY = [
    "test_resolve_cudagraph_mode",
]

EDIT = (
    '    if CUDAGRAPH_MODES[mode][0] == "FULL" and spec_decode and support < uniform_batch:\n'
    '        mode = "PIECEWISE"\n',
    '',
)
