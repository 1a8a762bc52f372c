"""free_blocks() evicts a block from the prefix cache as soon as it is freed (eager eviction).

Invariant 4 breaks: a finished request's cached prefix vanishes at once, although its blocks sit
unused in the free queue and nobody needs their memory yet. The next request with the same system
prompt misses and recomputes it. Symptom: after free, get_cached_block returns None.
"""

CAUGHT_BY = [
    "test_cached_block_survives_free_until_reused",
    "test_touch_revives_a_cached_block_from_the_middle",
    "test_block_ids_are_stable",
    "test_random_interleavings_keep_the_invariants",
]

EDIT = (
    "            if block.ref_cnt == 0:\n                self.free_block_queue.append(block)\n",
    "            if block.ref_cnt == 0:\n                self.free_block_queue.append(block)\n"
    "                self._maybe_evict_cached_block(block)  # evicted now instead of when reused\n",
)
