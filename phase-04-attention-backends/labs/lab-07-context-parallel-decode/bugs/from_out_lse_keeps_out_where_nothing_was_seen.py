"""from_out_lse passes out through as acc everywhere, trusting it to be 0 where lse is -inf.

to_out_lse writes 0 there, so the round trip looks fine. But an (out, lse) pair may come from a
kernel that leaves the output of a set of no key uninitialized, NaN included; the merge multiplies
acc by that rank's weight, exp(-inf) = 0, and 0 * NaN is NaN. Symptom: acc holds NaN where lse is
-inf and out holds NaN.
"""

CAUGHT_BY = [
    "test_from_out_lse_gives_summaries_that_merge_like_the_originals",
    "test_from_out_lse_keeps_each_floating_dtype",
]

EDIT = (
    '    acc = torch.where(seen.unsqueeze(-1), out, torch.zeros_like(out))  # out may hold anything where no key\n',
    "    acc = out.clone()  # out is 0 where nothing was seen, anyway\n",
)
