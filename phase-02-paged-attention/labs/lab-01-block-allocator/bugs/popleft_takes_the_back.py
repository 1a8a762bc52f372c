"""popleft() takes the block at the back of the queue: the most recently freed block is reused first.

The queue's order is the eviction order: the front holds the blocks freed longest ago (and, within
one request, its tail blocks). Taking from the back evicts the prefix a request cached a moment
ago, the one most likely to be hit next (most recently used first, the opposite of LRU).
Symptom: after blocks [0..4] and popleft(), block 4 comes out instead of block 0.
"""

CAUGHT_BY = [
    "test_popleft_and_append_keep_fifo_order",
    "test_null_block_is_reserved",
    "test_get_new_blocks_takes_the_front",
    "test_random_interleavings_keep_the_invariants",
]

EDIT = (
    "        block = self.fake_free_list_head.next_free_block\n        self.remove(block)\n",
    "        block = self.fake_free_list_tail.prev_free_block  # the back, not the front\n        self.remove(block)\n",
)
