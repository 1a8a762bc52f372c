"""The speculative-decoding check of resolve_cudagraph_mode_and_sizes skipped.

With speculative decoding every decode request brings several query tokens; a backend whose
support is below UNIFORM_BATCH cannot replay those in a full graph. Symptom: FULL_AND_PIECEWISE
kept on a UNIFORM_SINGLE_TOKEN_DECODE group with spec_decode=True.
"""

CAUGHT_BY = ["test_resolve_cudagraph_mode"]

EDIT = (
    '    if CUDAGRAPH_MODES[mode][0] == "FULL" and spec_decode and support < uniform_batch:\n',
    '    if False:  # BUG: speculative decoding not considered\n',
)
