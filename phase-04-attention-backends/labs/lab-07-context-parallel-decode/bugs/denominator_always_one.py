"""from_out_lse returns a denominator of 1 everywhere, also where lse is -inf.

The decoded summary of an empty rank is (-inf, 1, zeros), not the identity (-inf, 0, zeros); the
merge still gives it weight exp(-inf) = 0, so outputs survive, but the summary is not the one the
encoding stands for. Symptom: from_out_lse's identity check fails.
"""

CAUGHT_BY = [
    "test_from_out_lse_gives_summaries_that_merge_like_the_originals",
]

EDIT = (
    '    return lse.clone(), seen.to(out.dtype), torch.where(seen.unsqueeze(-1), out, torch.zeros_like(out))\n',
    '    return lse.clone(), torch.ones_like(lse), torch.where(seen.unsqueeze(-1), out, torch.zeros_like(out))\n',
)
