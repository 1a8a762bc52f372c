"""Folds the scale into the caller's query in place, and scales the scores again.

Every score ends up divided by head_dim instead of sqrt(head_dim).

The output is attention with the wrong scale, and the caller's query has changed. A test that
computed its expectation from q after the call would see the changed q, apply the right scale
to it, and get this very output: the two mistakes hide each other. Symptom here: wrong outputs
in every test that computes its expectation first (or hands q over read-only: numpy refuses the
write).
"""

CAUGHT_BY = [
    "test_paged_matches_dense_exactly",
    "test_gqa_matches_dense",
    "test_paged_attention_leaves_its_inputs_alone",
]

EDIT = (
    "        scores = k[:, kv_head, :] @ q[h] * scale  # [seq_len]\n",
    "        q[h] *= scale  # folds the scale into the caller's query ...\n"
    "        scores = k[:, kv_head, :] @ q[h] * scale  # ... and applies it again\n",
)
