"""The dense oracle computes exp(scores) / sum(exp(scores)) without subtracting the max.

Symptom: exact on ordinary scores; NaN once a score passes ~709 (inf/inf) or every score is below
~-745 (0/0). An oracle that breaks where the kernel must not is no oracle.
"""

CAUGHT_BY = ["test_dense_attention_survives_large_logits"]

EDIT = (
    "    weights = np.exp(scores - scores.max())  # max first: every exponent <= 0\n",
    "    weights = np.exp(scores)  # no max subtracted\n",
)
