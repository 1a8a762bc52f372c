"""A vectorized softmax normalized over the head axis instead of the token axis.

The loop over heads is replaced by one [num_heads, seq_len] score matrix (what "Going further"
suggests), and its max and sum run over axis 0: each token's weights sum to 1 across heads
instead of each head's weights summing to 1 across tokens. Symptom: outputs of the wrong
magnitude. (This edit replaces the whole loop: the mistake only exists in the vectorized form.)
"""

CAUGHT_BY = ["test_paged_matches_dense_exactly", "test_gqa_matches_dense", "test_indirection_is_the_identity"]

EDIT = (
    """    for h in range(num_heads):
        kv_head = h // group
        scores = k[:, kv_head, :] @ q[h] * scale  # [seq_len]
        weights = np.exp(scores - scores.max())  # max first: exp never overflows
        out[h] = (weights / weights.sum()) @ v[:, kv_head, :]
""",
    """    kv_of_head = np.arange(num_heads) // group
    scores = np.einsum("thd,hd->ht", k[:, kv_of_head], q) * scale  # [num_heads, seq_len]
    weights = np.exp(scores - scores.max(axis=0, keepdims=True))  # axis 0 is the head axis
    out[:] = np.einsum("ht,thd->hd", weights / weights.sum(axis=0, keepdims=True), v[:, kv_of_head])
""",
)
