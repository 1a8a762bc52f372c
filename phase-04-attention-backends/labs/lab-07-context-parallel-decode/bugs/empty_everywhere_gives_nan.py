"""The global max used as the reference even where it is -inf (no rank holds a token).

exp(m - global_m) is then exp(-inf - (-inf)) = exp(NaN). A rank whose own shard is empty is fine
as long as another rank holds a token (exp(-inf - M) = 0). Symptom: NaN, instead of zeros, for a
sequence of length 0.
"""

CAUGHT_BY = [
    "test_empty_shards_change_nothing",
]

EDIT = (
    '    reference = torch.where(torch.isfinite(global_m), global_m, torch.zeros_like(global_m))\n',
    '    reference = global_m\n',
)
