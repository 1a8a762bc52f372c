"""The CUDA-graph mode resolved against the first attention group instead of the weakest.

resolve_cudagraph_mode_and_sizes receives the minimum support over every group (the runner's
_check_and_update_cudagraph_mode). Symptom: FULL kept for a model whose second group supports
only UNIFORM_SINGLE_TOKEN_DECODE.
"""

CAUGHT_BY = ["test_resolve_cudagraph_mode"]

EDIT = (
    '    support = min(_check_supports(supports))\n',
    '    support = _check_supports(supports)[0]  # BUG: the first group, not the weakest\n',
)
