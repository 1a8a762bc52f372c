"""A request finishes when it has more than max_new_tokens outputs, not when it has max_new_tokens.

The comparison is > instead of >=: every request runs one step too long and generates one token too
many, with the blocks to match.
"""

CAUGHT_BY = ["test_tokens_match_generate", "test_chunk_size_changes_nothing", "test_every_block_returns_to_the_pool"]

EDIT = (
    "            if len(request.output_token_ids) >= request.max_new_tokens:\n",
    "            if len(request.output_token_ids) > request.max_new_tokens:\n",
)
