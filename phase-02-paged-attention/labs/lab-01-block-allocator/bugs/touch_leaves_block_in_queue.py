"""touch() counts the new reference but leaves a free block in the free queue.

Invariant 1 (and 4) breaks: the revived cached block is held by the newcomer and still waits in
the free queue, so the next get_new_blocks hands it to another request and evicts its hash while
the newcomer reads it. Symptom: a touched block is still in the queue and is handed out again.
"""

CAUGHT_BY = ["test_touch_revives_a_cached_block_from_the_middle", "test_random_interleavings_keep_the_invariants"]

EDIT = (
    "            if block.ref_cnt == 0:\n"
    "                self.free_block_queue.remove(block)\n"
    "            block.ref_cnt += 1\n",
    "            block.ref_cnt += 1  # a free block stays in the free queue\n",
)
