"""from_out_lse returns a denominator of 1 everywhere, also where lse is -inf.

The decoded summary of an empty rank is (-inf, 1, zeros), not the identity (-inf, 0, zeros); the
merge still gives it weight exp(-inf) = 0, so outputs survive, but the summary is not the one the
encoding stands for. Symptom: from_out_lse's identity check fails.
"""

CAUGHT_BY = [
    "test_from_out_lse_gives_summaries_that_merge_like_the_originals",
]

EDIT = (
    "    return m, seen.to(out.dtype), acc\n",
    "    return m, torch.ones_like(lse), acc\n",
)
