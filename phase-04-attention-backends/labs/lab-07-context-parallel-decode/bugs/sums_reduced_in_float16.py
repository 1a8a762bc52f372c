"""The rescaled sums sent through the all-reduce in float16, to halve the bytes.

The output keeps float64 as its dtype, so a dtype check cannot see it: float16 keeps 11 bits, and
every output is off by about 1e-3. Symptom: every distributed test fails, on 1 rank too, by ~1e-3;
the message asks whether a step is computed in float32 or float16.
"""

CAUGHT_BY = ["test_ranks_match_dense_attention_on_ragged_batches"]

EDIT = (
    '    dist.all_reduce(sums, op=dist.ReduceOp.SUM, group=group)\n',
    '    sums = sums.half()  # half the bytes on the wire\n'
    '    dist.all_reduce(sums, op=dist.ReduceOp.SUM, group=group)\n'
    '    sums = sums.to(acc.dtype)\n',
)
