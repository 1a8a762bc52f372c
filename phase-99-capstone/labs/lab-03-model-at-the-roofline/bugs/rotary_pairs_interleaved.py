"""The rotary embedding pairs neighbouring dimensions (GPT-J's interleaved convention) instead of
dimension ``i`` with ``i + head_dim / 2`` (transformers' ``rotate_half``, the one Llama is trained with).

Both are rotations by the same angles, so norms are kept and the numbers look sane; the pairs are
not the ones the weights expect, and attention scores come out wrong.
"""

CAUGHT_BY = ["test_rotary_and_cache_matches_float64", "test_tokens_and_logits_match_generate"]

EDIT = (
    "    return c // half, angle, angle, angle + half\n",
    "    return c // half, angle, 2 * angle, 2 * angle + 1\n",
)
