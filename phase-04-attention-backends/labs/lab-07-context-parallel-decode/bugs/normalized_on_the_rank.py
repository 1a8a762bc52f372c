"""The rank returns acc / denom as its accumulator: the summary is normalized before the combine.

The combines divide by the (rescaled) denominators once more: every output is divided twice.
Symptom: wrong summaries, and wrong outputs on any number of ranks (on 1 rank, acc / denom**2).
"""

CAUGHT_BY = ["test_rank_summaries_match_the_definition", "test_ranks_match_dense_attention_on_ragged_batches"]

EDIT = (
    '    return m, denom, acc\n\n\n# ----',
    '    return m, denom, acc / np.where(denom > 0, denom, 1.0)[..., None]\n\n\n# ----',
)
