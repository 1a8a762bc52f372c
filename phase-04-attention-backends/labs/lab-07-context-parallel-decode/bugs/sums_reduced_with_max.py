"""The rescaled (denom, acc) all-reduced with MAX instead of SUM.

After rescaling to the shared max the ranks' sums must be added; MAX keeps one rank's share of each
number. Symptom: right on 1 rank, wrong on 2 and 4; the message names "all-reducing the rescaled
sums with MAX instead of SUM".
"""

CAUGHT_BY = [
    "test_empty_shards_change_nothing",
    "test_ranks_match_dense_attention_on_ragged_batches",
]

EDIT = (
    '    dist.all_reduce(sums, op=dist.ReduceOp.SUM, group=group)\n',
    '    dist.all_reduce(sums, op=dist.ReduceOp.MAX, group=group)\n',
)
