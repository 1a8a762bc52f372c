"""The mean square taken down each column (over the tokens) instead of along each row.

Every value is divided by the root mean square of its column across the batch: a single token comes
out as the signs of its values, and a token's norm depends on its neighbours in the batch.
"""

CAUGHT_BY = ["test_rms_norm_matches_float64"]

EDITS = [
    ("    variance = tl.sum(xf * xf, axis=1) / hidden\n",
     "    variance = tl.sum(xf * xf, axis=0) / num_rows\n"),
    ("    normed = (xf * tl.rsqrt(variance + eps)[:, None]).to(x.dtype).to(tl.float32)\n",
     "    normed = (xf * tl.rsqrt(variance + eps)[None, :]).to(x.dtype).to(tl.float32)\n"),
]
