"""token_owner flattens the positions before dealing them.

``ravel()`` (or a loop that collects a list) makes any positions one row of tokens. The ranks and
local positions are right, but shaped [n], not like the positions. Symptom: positions of shape
[3, 3] give answers of shape [9], a 0-d position an answer of shape [1]; a caller that indexes
them like its positions gets the wrong tokens, or an error.
"""

CAUGHT_BY = ["test_token_owner_interleaves_single_tokens_like_vllm"]

EDIT = (
    "    positions = _as_positions(positions)\n    world_size = _check_count(",
    "    positions = _as_positions(positions).ravel()  # one row of tokens\n    world_size = _check_count(",
)
