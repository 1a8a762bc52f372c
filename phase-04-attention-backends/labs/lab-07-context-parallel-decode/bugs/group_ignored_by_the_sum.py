"""The SUM all-reduce called without group=group: it runs over the whole world, not the caller's group.

With the default group (every test that uses it) nothing shows. Symptom: when ranks 0-1 and 2-3
combine as two groups of 2, each pair adds the other pair's sums to its own; the message says every
collective must be given group=group.
"""

CAUGHT_BY = ["test_combine_uses_the_group_it_is_given"]

EDIT = (
    '    dist.all_reduce(sums, op=dist.ReduceOp.SUM, group=group)\n',
    '    dist.all_reduce(sums, op=dist.ReduceOp.SUM)  # the whole world\n',
)
