"""get_computed_blocks caps the hit by the prompt's length, not by all the request's tokens.

The last token must be computed, so a hit holds at most ``num_tokens - 1`` tokens: every token of
the request, the decoded ones included. A preempted request comes back with its output tokens, and
their full blocks are cached; capping at ``len(prompt_token_ids) - 1`` leaves them out, and the
request recomputes tokens the cache holds. Symptom: a request preempted at 13 tokens (10 of prompt)
hits 8 tokens instead of 12 and takes two new blocks instead of one.
"""

CAUGHT_BY = ["test_a_preempted_request_hits_the_blocks_its_decoding_filled"]

EDIT = (
    "        max_cache_hit_length = request.num_tokens - 1\n",
    "        max_cache_hit_length = len(request.prompt_token_ids) - 1  # the prompt's last token\n",
)
