"""Scores are q . k, without the 1/sqrt(head_dim) factor.

Symptom: a sharper softmax (every score sqrt(head_dim) times too large): the output leans
towards the best-matching token; no error, no NaN, just a different answer.
"""

CAUGHT_BY = ["test_paged_matches_dense_exactly", "test_gqa_matches_dense", "test_chunked_prefill_write_path"]

EDIT = (
    "    scale = 1.0 / np.sqrt(head_dim)\n",
    "    scale = 1.0  # no 1/sqrt(head_dim)\n",
)
