"""Prefix-cache hits are counted, but the request starts computing at token 0 anyway.

The hit blocks are shared with the request that filled them; restarting at position 0 rewrites their
keys and values (into another request's cache) and computes every hit token again. When the prompt
runs in one chunk the tokens still come out right, which makes it sneaky: only the work done and the
writes into shared blocks show it. When it takes several chunks the KV-cache manager notices that its
cached-block count would go backwards, and raises.
"""

CAUGHT_BY = ["test_prefix_cache_hits_as_predicted", "test_step_inputs_match_brute_force", "test_tokens_match_generate"]

EDIT = (
    "            request.num_computed_tokens = num_hit_tokens  # the hits are computed: never again\n",
    "            request.num_computed_tokens = 0  # hits counted, but recomputed from the start\n",
)
