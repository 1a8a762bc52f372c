"""A vectorized softmax shifted by one max for all heads: the max forgets its axis, the sum does not.

The loop over heads is replaced by one [num_heads, seq_len] score matrix (what "Going further"
suggests), normalized over the token axis as it should be, but shifted by ``scores.max()``, the
largest score of every head at once, instead of each head's own. The shift cancels in the ratio,
so nothing changes while the heads score alike; a head whose scores all lie more than ~745 below
another head's max gets exp() = 0 on every token, and 0/0. Symptom: NaN rows for some heads when
the heads' scores are far apart, right answers otherwise. (This edit replaces the whole loop: the
mistake only exists in the vectorized form.)
"""

CAUGHT_BY = ["test_each_query_head_is_shifted_by_its_own_max"]

EDIT = (
    """    for h in range(num_heads):
        kv_head = h // group
        scores = k[:, kv_head, :] @ q[h] * scale  # [seq_len]
        weights = np.exp(scores - scores.max())  # max first: exp never overflows
        out[h] = (weights / weights.sum()) @ v[:, kv_head, :]
""",
    """    kv_of_head = np.arange(num_heads) // group
    scores = np.einsum("thd,hd->ht", k[:, kv_of_head], q) * scale  # [num_heads, seq_len]
    weights = np.exp(scores - scores.max())  # one max for every head: axis=-1, keepdims=True forgotten
    out[:] = np.einsum("ht,thd->hd", weights / weights.sum(axis=-1, keepdims=True), v[:, kv_of_head])
""",
)
