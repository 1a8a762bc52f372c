"""The shared reference taken as the MIN of the ranks' maxima instead of the MAX.

In exact arithmetic any shared reference merges exactly, which is why ordinary scores pass; the MAX
is what keeps every factor exp(m - M) at most 1. Symptom: with scores near +1000 on one rank its
factor is exp(~1000) = inf, and inf / inf gives NaN; the message names the overflow.
"""

CAUGHT_BY = ["test_huge_logits_on_one_rank"]

EDIT = (
    '    dist.all_reduce(global_m, op=dist.ReduceOp.MAX, group=group)\n',
    '    dist.all_reduce(global_m, op=dist.ReduceOp.MIN, group=group)\n',
)
