"""A newcomer's chunk is counted from the start of its prompt, not from the end of its prefix-cache hits.

The hits are taken, but the number of new tokens is min(num_tokens, budget) instead of
min(num_tokens - hits, budget): the hit tokens are scheduled a second time, which asks the KV-cache
manager for slots past the request's last token.
"""

CAUGHT_BY = ["test_prefix_cache_hits_as_predicted", "test_tokens_match_generate"]

EDIT = (
    "            num_new_tokens = min(request.num_tokens - num_hit_tokens, budget)\n",
    "            num_new_tokens = min(request.num_tokens, budget)  # the hits counted again\n",
)
