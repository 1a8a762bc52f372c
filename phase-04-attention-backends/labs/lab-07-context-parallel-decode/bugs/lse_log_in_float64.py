"""to_out_lse takes the log of the denominator in float64, for accuracy, and adds m to it.

float32 + float64 is float64 in torch: lse comes back float64 for float32 summaries, and the
all-gather route's concatenation of (out, lse), then its merge, promote the combine's output too.
Symptom: float64 in, float64 out (every float64 test passes); float32 in, a float64 lse.
"""

CAUGHT_BY = ["test_to_out_lse_keeps_each_floating_dtype", "test_combine_keeps_each_floating_dtype"]

EDIT = (
    "    lse = torch.where(seen, m + torch.log(safe_denom), torch.full_like(m, -torch.inf))\n",
    "    lse = torch.where(seen, m + torch.log(safe_denom.double()), torch.full_like(m, -torch.inf))\n",
)
