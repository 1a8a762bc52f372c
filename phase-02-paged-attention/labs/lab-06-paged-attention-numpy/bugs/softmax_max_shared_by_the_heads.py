"""The softmax of every head shifted by one max, the largest score of all heads, computed once.

The shift cancels in the ratio, so nothing changes while the heads score alike (the vectorized form
that "Going further" suggests makes the same mistake with ``scores.max()`` over the whole
[num_heads, seq_len] matrix, ``axis=-1, keepdims=True`` forgotten). A head whose scores all lie
more than ~745 below another head's max gets exp() = 0 on every token, and 0/0. Symptom: NaN rows
for some heads when the heads' scores are far apart, right answers otherwise.
"""

CAUGHT_BY = ["test_each_query_head_is_shifted_by_its_own_max"]

EDITS = [
    ("    for h in range(num_heads):\n",
     "    top = max((k[:, h // group, :] @ q[h] * scale).max() for h in range(num_heads))  # one max for all heads\n"
     "    for h in range(num_heads):\n"),
    ("        weights = np.exp(scores - scores.max())  # max first: exp never overflows\n",
     "        weights = np.exp(scores - top)\n"),
]
