"""Softmax as exp(scores) / sum(exp(scores)), without subtracting the row's max first.

Symptom: exact on ordinary scores; NaN as soon as a score passes ~709 (exp overflows to inf,
inf/inf) or every score is below ~-745 (exp underflows to 0, 0/0).
"""

CAUGHT_BY = ["test_large_logits_do_not_overflow"]

EDIT = (
    "        weights = np.exp(scores - scores.max())  # max first: exp never overflows\n",
    "        weights = np.exp(scores)  # no max subtracted\n",
)
