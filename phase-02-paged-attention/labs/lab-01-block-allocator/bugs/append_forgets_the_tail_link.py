"""append() links the block after the last one but leaves the tail sentinel pointing at the old last block.

Walking forward still looks right after one append, but the prev links disagree with the next
links, and the next append attaches after the stale last block, cutting the first appended block
out of the list while num_free_blocks still counts it. Symptom: blocks vanish from the queue.
"""

CAUGHT_BY = [
    "test_queue_links_the_blocks_in_order",
    "test_popleft_and_append_keep_fifo_order",
    "test_null_block_is_reserved",
]

EDIT = (
    "        self.fake_free_list_tail.prev_free_block = block\n        self.num_free_blocks += 1\n",
    "        self.num_free_blocks += 1  # the tail sentinel still points at the old last block\n",
)
