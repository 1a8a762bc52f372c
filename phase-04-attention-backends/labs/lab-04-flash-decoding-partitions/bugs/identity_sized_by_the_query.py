"""attend_partial over zero keys returns an identity whose acc has the query's length d, not the values' dv.

The summary's acc has one entry per value dimension. Every test whose values are as wide as the keys
passes; with dv != d, the identity of an empty chunk has the wrong length and the merge refuses it
(acc lengths differ), or numpy broadcasts it. Symptom: attend_partial(q, k[:0], v[:0]) has an acc of
shape [d] for values of width dv.
"""

CAUGHT_BY = ["test_attend_partial_of_zero_keys_is_the_identity", "test_values_narrower_or_wider_than_the_keys"]

EDIT = (
    "        return _identity(v.shape[1])\n",
    "        return _identity(q.shape[0])  # the head size of the query\n",
)
