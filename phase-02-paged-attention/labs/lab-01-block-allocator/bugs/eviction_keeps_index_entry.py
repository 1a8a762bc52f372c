"""Lazy eviction resets the block's hash but leaves it in the prefix-cache index.

The reused block now belongs to a new request and will hold other tokens, but its old key still
finds it: the next request with the old prefix "hits" it and attends over someone else's KV
(silently wrong output, not a crash). Symptom: after a cached block is handed out again, its old
key still returns it.
"""

CAUGHT_BY = ["test_cached_block_survives_free_until_reused", "test_random_interleavings_keep_the_invariants"]

EDIT = (
    "        same_hash = self.cached_block_hash_to_block[block.block_hash]\n"
    "        del same_hash[block.block_id]\n"
    "        if not same_hash:\n"
    "            del self.cached_block_hash_to_block[block.block_hash]\n",
    "",
)
