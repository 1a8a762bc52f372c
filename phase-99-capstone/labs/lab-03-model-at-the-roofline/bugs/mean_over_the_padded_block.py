"""The mean square divided by the block's width (a power of two) instead of the row's hidden size.

Right when the hidden size is a power of two (2048), wrong for 72 or 5120: the padding columns hold
zeros, which add nothing to the sum but count in the mean.
"""

CAUGHT_BY = ["test_rms_norm_matches_float64"]

EDIT = (
    "    variance = tl.sum(xf * xf, axis=1) / hidden\n",
    "    variance = tl.sum(xf * xf, axis=1) / BLOCK\n",
)
