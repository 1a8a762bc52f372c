"""partitioned_attention of zero keys returns zeros(d), the query's length, instead of zeros(dv).

Symptom: right whenever the values are as wide as the keys; for values of width dv != d, the output
of an empty sequence has the wrong shape.
"""

CAUGHT_BY = ["test_zero_keys_gives_zeros", "test_values_narrower_or_wider_than_the_keys"]

EDIT = (
    "        return np.zeros(v.shape[1])\n",
    "        return np.zeros(q.shape[0])  # the query's head size\n",
)
