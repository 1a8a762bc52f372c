"""The ranks' denominators and accumulators summed as they are, without rescaling to the global max.

Each rank's sums are measured against its own max; adding them mixes references. Symptom: right on
1 rank, wrong on 2 and 4 whenever the ranks' maxima differ; with +1000 on one rank, NaN or garbage.
"""

CAUGHT_BY = ["test_huge_logits_on_one_rank", "test_all_logits_near_minus_1000"]

EDIT = (
    '    scale = torch.exp(m - reference)  # <= 1: no overflow, whatever the scores; 0 for an empty shard\n',
    '    scale = torch.ones_like(m)  # no rescaling\n',
)
