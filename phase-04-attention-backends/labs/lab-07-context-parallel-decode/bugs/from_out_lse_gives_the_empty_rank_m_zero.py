"""from_out_lse decodes the summary of no key (lse = -inf) as m = 0 instead of -inf.

With denom = 0 and acc = 0 the summary still adds nothing, so it looks safe. But m takes part in
the max: the shared reference is then at least 0, and ranks whose scores all sit near -1000 get
weights exp(-1000 - 0) = 0. Symptom: from_out_lse's m is 0 where lse is -inf; the all-gather route
gives zeros where a rank holds none of a sequence near -1000.
"""

CAUGHT_BY = ["test_from_out_lse_gives_summaries_that_merge_like_the_originals",
             "test_ranks_that_hold_nothing_near_minus_1000"]

EDIT = (
    '    m = torch.where(seen, lse, torch.full_like(lse, -torch.inf))\n',
    "    m = torch.where(seen, lse, torch.zeros_like(lse))  # no -inf\n",
)
