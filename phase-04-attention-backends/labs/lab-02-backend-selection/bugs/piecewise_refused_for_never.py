"""A backend with no full-graph support is refused every CUDA-graph mode, ``PIECEWISE`` included.

``NEVER`` means no *full* graph; piecewise graphs leave attention outside the captured pieces and
work with every backend (they are v0.10.1's default). Symptom: FlexAttention, CUTLASS MLA and
Triton MLA cannot run with the default mode at all.
"""

CAUGHT_BY = ["test_resolve_cudagraph_mode"]

EDIT = (
    '    if "FULL" in CUDAGRAPH_MODES[mode] and support == never:\n',
    '    if support == never:  # BUG: every mode refused, piecewise ones too\n',
)
