"""from_out_lse tells a set of no key by lse == -inf alone: FlashAttention-2's +inf is taken for keys.

FlashAttention-2 reports the log-sum-exp of a set of no key as +inf, version 3 as -inf. With seen =
lse > -inf, a +inf entry decodes to (m = +inf, denom = 1, acc = out): the merge's shared max becomes
+inf and every weight exp(m - inf) is 0 or NaN. Symptom: from_out_lse of lse = +inf gives m = +inf
and denom 1 instead of the identity.
"""

CAUGHT_BY = ["test_from_out_lse_gives_summaries_that_merge_like_the_originals"]

EDIT = (
    "    seen = torch.isfinite(lse)  # -inf, or FlashAttention-2's +inf: no key\n",
    "    seen = lse > -torch.inf  # -inf is no key\n",
)
