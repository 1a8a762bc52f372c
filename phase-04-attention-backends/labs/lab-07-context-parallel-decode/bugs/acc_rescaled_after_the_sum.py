"""acc all-reduced as it is, and rescaled afterwards with the rank's own factor.

The sum of accumulators measured against different maxima means nothing, and multiplying it by one
rank's exp(m_r - M) afterwards gives each rank a different answer. Symptom: wrong outputs that differ
from rank to rank.
"""

CAUGHT_BY = [
    "test_all_logits_near_minus_1000",
    "test_empty_shards_change_nothing",
    "test_huge_logits_on_one_rank",
    "test_ranks_match_dense_attention_on_ragged_batches",
]

EDITS = [
    (
        '    sums = torch.cat([(denom * scale).unsqueeze(-1), acc * scale.unsqueeze(-1)], dim=-1)\n',
        '    sums = torch.cat([(denom * scale).unsqueeze(-1), acc], dim=-1)  # acc not rescaled yet\n',
    ),
    (
        '    total_denom, total_acc = sums[..., 0], sums[..., 1:]\n',
        '    total_denom, total_acc = sums[..., 0], sums[..., 1:] * scale.unsqueeze(-1)  # too late\n',
    ),
]
