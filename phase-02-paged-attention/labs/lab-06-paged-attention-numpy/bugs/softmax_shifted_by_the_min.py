"""The softmax subtracts the row's min instead of its max before exp.

Any shift gives the same softmax in exact arithmetic, so the answer is right while the scores are
close together; but only the max keeps every exponent <= 0. Scores near -1000 and +1000 in one row
give exp(2000) = inf, and inf / inf = NaN. Symptom: NaN for rows whose scores spread past ~709.
"""

CAUGHT_BY = ["test_large_logits_do_not_overflow"]

EDIT = (
    "        weights = np.exp(scores - scores.max())  # max first: exp never overflows\n",
    "        weights = np.exp(scores - scores.min())  # any shift is the same softmax...\n",
)
