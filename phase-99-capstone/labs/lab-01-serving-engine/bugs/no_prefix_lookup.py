"""New requests never look up the prefix cache.

Blocks are still cached (the KV-cache manager does it), but nobody asks for them: every request
computes its whole prompt. Right tokens, no hit, all the work.
"""

CAUGHT_BY = ["test_prefix_cache_hits_as_predicted"]

EDIT = (
    "            hits, num_hit_tokens = self.kv_manager.get_computed_blocks(request)\n",
    "            hits, num_hit_tokens = [], 0  # no lookup\n",
)
