"""from_out_lse builds the denominator as float64 (seen.double()) whatever out's dtype.

1.0 and 0.0 are exact in every dtype, so the numbers are right. But the decoded summary mixes
dtypes, and the all-gather route's merge multiplies by it: its output becomes float64 for float32
summaries. Symptom: from_out_lse's denom is float64 for float32 (out, lse).
"""

CAUGHT_BY = ["test_from_out_lse_keeps_each_floating_dtype", "test_combine_keeps_each_floating_dtype"]

EDIT = (
    '    return m, seen.to(out.dtype), acc\n',
    "    return m, seen.double(), acc\n",
)
