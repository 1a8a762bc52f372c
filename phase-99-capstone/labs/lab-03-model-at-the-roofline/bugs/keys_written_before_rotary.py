"""The keys written into the cache before their rotation: the queries turn, the cached keys do not.

The attention of the step that writes them is as wrong as every later one: every score compares a
rotated query with an unrotated key.
"""

CAUGHT_BY = ["test_rotary_and_cache_matches_float64", "test_tokens_and_logits_match_generate"]

EDIT = (
    "    k1, k2 = _rotate(k1, k2, cos, sin)\n",
    "",
)
