"""free_blocks() appends the freed blocks in reverse: the caller's eviction order is turned around.

The caller (the KV-cache manager) lists a finished request's blocks tail first, so that the tail is
evicted before the prefix that other requests are likely to share. Reversing them here puts the
prefix first in line for eviction. Symptom: freeing [3, 1, 5] queues 5, 1, 3.
"""

CAUGHT_BY = [
    "test_free_blocks_returns_in_the_order_given",
    "test_cached_block_survives_free_until_reused",
    "test_random_interleavings_keep_the_invariants",
]

EDIT = (
    "        for block in blocks:\n            block.ref_cnt -= 1\n",
    "        for block in reversed(blocks):  # the caller's order, turned around\n            block.ref_cnt -= 1\n",
)
