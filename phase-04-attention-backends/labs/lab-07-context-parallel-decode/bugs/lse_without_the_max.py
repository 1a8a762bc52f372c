"""lse computed as log(denom), without adding m back.

denom = sum exp(s - m) is measured against the rank's own max; its log is the log-sum-exp minus m.
Ranks with different maxima then get the wrong relative weight. Symptom: the all-gather route is
wrong whenever the ranks' maxima differ (and huge logits on one rank are lost).
"""

CAUGHT_BY = [
    "test_all_logits_near_minus_1000",
    "test_empty_shards_change_nothing",
    "test_huge_logits_on_one_rank",
    "test_ranks_match_dense_attention_on_ragged_batches",
    "test_to_out_lse_is_the_output_and_the_log_sum_exp",
    "test_to_out_lse_keeps_each_floating_dtype",
]

EDIT = (
    '    lse = torch.where(seen, m + torch.log(safe_denom), torch.full_like(m, -torch.inf))\n',
    '    lse = torch.where(seen, torch.log(safe_denom), torch.full_like(m, -torch.inf))\n',
)
