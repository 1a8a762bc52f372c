"""from_out_lse returns the caller's lse itself as m, not a new tensor.

m = lse is the right number wherever lse is finite or -inf, so the value tests of the usual cases
pass. But the summary now shares its memory with the caller's lse: a merge that updates m in place
rewrites the caller's lse, and a caller that reuses its lse buffer (the next layer's kernel writes
into it) changes m under the summary; FlashAttention-2's +inf for a set of no key also stays +inf.
Symptom: writing into the returned m changes the caller's lse.
"""

CAUGHT_BY = ["test_conversions_return_new_tensors", "test_from_out_lse_gives_summaries_that_merge_like_the_originals"]

EDIT = (
    '    m = torch.where(seen, lse, torch.full_like(lse, -torch.inf))\n',
    "    m = lse  # -inf stays -inf\n",
)
