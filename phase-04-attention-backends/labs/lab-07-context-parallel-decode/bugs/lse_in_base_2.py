"""to_out_lse writes lse in base 2, m * log2(e) + log2(denom), as FlashInfer's kernels keep it.

Both encodings exist in real engines; mixing them does not work. The merge of the all-gather route
weighs each rank by exp(lse_rank - lse_max), the natural base: fed base-2 values, ranks whose
log-sum-exps differ get the wrong weights. Symptom: to_out_lse's lse is off by a factor of 1.44;
the all-gather route is wrong on 2 and 4 ranks, right on 1.
"""

CAUGHT_BY = [
    "test_to_out_lse_is_the_output_and_the_log_sum_exp",
    "test_to_out_lse_keeps_each_floating_dtype",
    "test_ranks_match_dense_attention_on_ragged_batches",
]

EDIT = (
    "    lse = torch.where(seen, m + torch.log(safe_denom), torch.full_like(m, -torch.inf))\n",
    "    lse = torch.where(seen, m * 1.4426950408889634 + torch.log2(safe_denom), torch.full_like(m, -torch.inf))\n",
)
