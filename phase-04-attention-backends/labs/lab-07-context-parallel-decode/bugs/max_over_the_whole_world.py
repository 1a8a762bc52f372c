"""The MAX all-reduce called without group=group: the reference is the whole world's maximum.

Any reference at least as large as the group's maximum gives the same output in exact arithmetic,
so with the default group, or pairs whose scores are alike, nothing shows. But when another group's
scores are 1000 higher, this group's weights exp(m - M) underflow to 0 and its denominators vanish.
Symptom: zeros where the pair whose scores are near 0 should get its attention output.
"""

CAUGHT_BY = ["test_combine_uses_the_group_it_is_given"]

EDIT = (
    "    dist.all_reduce(global_m, op=dist.ReduceOp.MAX, group=group)\n",
    "    dist.all_reduce(global_m, op=dist.ReduceOp.MAX)  # the whole world\n",
)
