"""The rotation's sine with the wrong sign: every head turns by minus its angle.

Relative positions come out mirrored: a query sees a key ``n`` tokens back as if it were ``n`` tokens
ahead.
"""

CAUGHT_BY = ["test_rotary_and_cache_matches_float64", "test_tokens_and_logits_match_generate"]

EDIT = (
    "    return x1 * cos - x2 * sin, x2 * cos + x1 * sin\n",
    "    return x1 * cos + x2 * sin, x2 * cos - x1 * sin\n",
)
