"""Causal mask with ``<`` instead of ``<=``: a query row may not see its own token.

Each row loses its own key. Row 0 of a prompt then sees nothing at all: its running max stays
-inf and its output is 0/0 = NaN. Later rows are merely wrong, and a one-token chunk (a decode
step) ignores the token it was run for.
"""

CAUGHT_BY = [
    "test_causal_mask_bounds",
    "test_prefill_from_scratch_matches_causal_attention",
    "test_chunked_equals_one_shot",
    "test_a_one_token_chunk_is_a_decode_step",
]

EDIT = (
    "    return keys[None, :] - np.arange(num_queries)[:, None] <= start\n",
    "    return keys[None, :] - np.arange(num_queries)[:, None] < start  # BUG: a row does not see itself\n",
)
