"""Full graphs for mixed batches on a backend without ``ALWAYS`` fall back to ``PIECEWISE``.

The decode batches can still run in full graphs: the mode is ``FULL_AND_PIECEWISE``. Symptom:
FULL on FlashAttention 2 resolves to PIECEWISE and the decode steps lose their full graphs.
"""

CAUGHT_BY = ["test_resolve_cudagraph_mode"]

EDIT = (
    '        mode = "FULL_AND_PIECEWISE"\n',
    '        mode = "PIECEWISE"  # BUG: the decode graphs thrown away too\n',
)
