"""The all-gather route merges the ranks' outputs with equal weights.

Every decoded summary (lse, 1, out) gets weight 1 instead of exp(lse - max lse): the output is the
mean of the non-empty ranks' outputs. Symptom: wrong on 2 and 4 ranks; right on 1.
"""

CAUGHT_BY = ["test_ranks_match_dense_attention_on_ragged_batches", "test_huge_logits_on_one_rank"]

EDIT = (
    '    weight = torch.exp(m - reference)  # 0 for a rank that saw no key\n',
    '    weight = torch.isfinite(m).to(m.dtype)  # equal weights\n',
)
