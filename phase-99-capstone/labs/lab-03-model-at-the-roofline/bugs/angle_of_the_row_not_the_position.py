"""The rotary angle taken from the token's row in the batch instead of its position.

Right for the first chunk of a lone request, where row and position coincide; wrong for every
decode, every later chunk and every request after the first in a step.
"""

CAUGHT_BY = ["test_rotary_and_cache_matches_float64", "test_tokens_and_logits_match_generate"]

EDIT = (
    "    angles = cos_sin_ptr + pos[:, None] * stride_cos_sin  # [ROWS, 1]: each token's row of the table\n",
    "    angles = cos_sin_ptr + tokens[:, None] * stride_cos_sin  # the token's row in the batch\n",
)
