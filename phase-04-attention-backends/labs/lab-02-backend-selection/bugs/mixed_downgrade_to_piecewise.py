"""Full graphs for mixed batches on a backend without ``ALWAYS`` fall back to ``PIECEWISE``.

The downgrade keeps what the backend can do: ``FULL_AND_PIECEWISE`` still replays uniform
decode batches from full graphs and only mixed batches piecewise. Dropping to ``PIECEWISE``
throws the decode graphs away: FlashAttention 2 and FlashInfer lose them for nothing.
"""

CAUGHT_BY = ["test_resolve_cudagraph_mode"]

EDIT = (
    '        mode = "FULL_AND_PIECEWISE"\n',
    '        mode = "PIECEWISE"  # BUG: the decode graphs thrown away too\n',
)
