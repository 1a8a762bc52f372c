"""Lazy eviction drops the index entry but forgets to reset the block's own hash.

The reused block carries a stale key: it looks cached while it holds new tokens, and when its new
request fills it, cache_full_blocks refuses it as "already cached" (vLLM asserts the same). Symptom:
block_hash is not None on a block that get_new_blocks just handed out.
"""

CAUGHT_BY = ["test_cached_block_survives_free_until_reused", "test_random_interleavings_keep_the_invariants"]

EDIT = (
    "            del self.cached_block_hash_to_block[block.block_hash]\n        block.reset_hash()\n",
    "            del self.cached_block_hash_to_block[block.block_hash]\n",
)
