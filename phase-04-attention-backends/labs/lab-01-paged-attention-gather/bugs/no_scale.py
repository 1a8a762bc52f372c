"""Scores are q . k without the 1/sqrt(d) factor (in the streaming pass).

Symptom: a softmax sqrt(d) times sharper than dense attention's: no error, no NaN, a different
answer that leans towards the best-matching token.
"""

CAUGHT_BY = ["test_matches_dense_block_aligned", "test_many_block_sizes", "test_paging_invariance"]

EDIT = (
    "    scale = 1.0 / np.sqrt(q.shape[0])\n",
    "    scale = 1.0  # no 1/sqrt(d)\n",
)
