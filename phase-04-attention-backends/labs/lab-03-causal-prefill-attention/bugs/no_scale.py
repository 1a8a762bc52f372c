"""Scores without the 1/sqrt(head_dim) scale.

The softmax gets sharper by sqrt(head_dim) (4x here): every output is wrong, by a lot.
"""

CAUGHT_BY = ["test_prefill_from_scratch_matches_causal_attention", "test_chunked_equals_one_shot"]

EDIT = (
    "    scale = 1.0 / np.sqrt(head_dim)\n",
    "    scale = 1.0  # BUG: no 1/sqrt(head_dim)\n",
)
