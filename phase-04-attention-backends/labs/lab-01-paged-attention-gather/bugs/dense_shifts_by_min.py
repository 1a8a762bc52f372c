"""The dense oracle shifts the scores by their min instead of their max before exp.

Any shift cancels in the softmax, so this is exact while the scores sit close together (all
near +1000, or all near -1000). With scores near -1000 and near +1000 in one row, exp(s - min)
reaches exp(~2000) = inf, and the weights become inf/inf = NaN. Symptom: only the mixed case of
the large-logit test fails.
"""

CAUGHT_BY = ["test_dense_attention_survives_large_logits"]

EDIT = (
    "    weights = np.exp(scores - scores.max())  # max first: every exponent <= 0\n",
    "    weights = np.exp(scores - scores.min())  # shifted by the min\n",
)
