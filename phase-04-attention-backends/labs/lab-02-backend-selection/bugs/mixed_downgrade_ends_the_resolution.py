"""The resolution returns FULL_AND_PIECEWISE as soon as mixed batches lose their full graphs.

The rules apply one after the other: FULL on a group below ALWAYS becomes FULL_AND_PIECEWISE, and
that mode still meets the speculative-decoding rule. Symptom: FULL with speculative decoding on a
UNIFORM_SINGLE_TOKEN_DECODE group keeps full decode graphs, which that backend cannot replay for
batches of several query tokens per request; the run should fall back to PIECEWISE.
"""

CAUGHT_BY = ["test_resolve_cudagraph_mode"]

EDIT = (
    '        mode = "FULL_AND_PIECEWISE"\n',
    '        return "FULL_AND_PIECEWISE"  # BUG: the rules below still apply\n',
)
