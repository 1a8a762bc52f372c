"""The input check lets an empty summary (denom 0) through with the m it came with.

An empty partial is legitimate input: FlashAttention-2 reports its log-sum-exp as +inf, and a split
kernel leaves whatever its scratch buffer held in the m of a split that had no key. Taken at its
word, +inf becomes the shared max and exp(inf - inf) is NaN; a leftover 0 becomes the shared max of
scores near -1000, whose weights then underflow to nothing. Symptom: merging an empty summary with
m = +inf gives NaN; with m = 0, beside keys near -1000, it gives an empty result.
"""

SOURCE = "_merge_checks.py"

CAUGHT_BY = ["test_an_empty_summary_merges_as_nothing"]

EDIT = (
    "        return -math.inf, 0.0, np.zeros(acc.shape[0])\n",
    "        return m, 0.0, acc  # keeps whatever m it came with\n",
)
