"""Each rank's normalized output acc / denom summed, and divided by the number of ranks.

An average of outputs forgets how much softmax mass each rank holds (its denominator at the global
max). Symptom: wrong on 2 and 4 ranks; NaN where a rank's shard is empty (0 / 0).
"""

CAUGHT_BY = ["test_empty_shards_change_nothing", "test_ranks_match_dense_attention_on_ragged_batches"]

EDIT = (
    '    sums = torch.cat([(denom * scale).unsqueeze(-1), acc * scale.unsqueeze(-1)], dim=-1)\n',
    '    sums = torch.cat([torch.ones_like(denom).unsqueeze(-1), acc / denom.unsqueeze(-1)], dim=-1)  # average\n',
)
