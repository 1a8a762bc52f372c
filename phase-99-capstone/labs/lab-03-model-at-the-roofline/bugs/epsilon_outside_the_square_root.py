"""The epsilon added to the root mean square instead of the mean square: ``x / (sqrt(mean(x**2)) + eps)``.

For rows of ordinary scale the two agree to a part in a million; for a row whose mean square is near
or below the epsilon (small activations, an all-but-zero row) the scale is off by orders of magnitude.
"""

CAUGHT_BY = ["test_rms_norm_matches_float64"]

EDIT = (
    "    normed = (xf * tl.rsqrt(variance + eps)[:, None]).to(x.dtype).to(tl.float32)\n",
    "    normed = (xf / (tl.sqrt(variance) + eps)[:, None]).to(x.dtype).to(tl.float32)\n",
)
