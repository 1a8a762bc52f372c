"""The rescaled denom and acc all-reduced by two SUMs, one each: three collectives instead of two.

The result is right, to the last bit. But at decode's message sizes a collective costs its latency,
not its bytes: a third one, waiting on the second, adds its whole latency to every layer of every
step, which is what one SUM of the two concatenated avoids. Symptom: every value test passes; the
ranks record all_reduce(MAX), all_reduce(SUM), all_reduce(SUM).
"""

CAUGHT_BY = ["test_combine_issues_the_collectives_the_readme_promises"]

EDIT = (
    "    sums = torch.cat([(denom * scale).unsqueeze(-1), acc * scale.unsqueeze(-1)], dim=-1)\n"
    "    dist.all_reduce(sums, op=dist.ReduceOp.SUM, group=group)\n"
    "    total_denom, total_acc = sums[..., 0], sums[..., 1:]\n",
    "    total_denom, total_acc = denom * scale, acc * scale.unsqueeze(-1)\n"
    "    dist.all_reduce(total_denom, op=dist.ReduceOp.SUM, group=group)  # one collective each\n"
    "    dist.all_reduce(total_acc, op=dist.ReduceOp.SUM, group=group)\n",
)
