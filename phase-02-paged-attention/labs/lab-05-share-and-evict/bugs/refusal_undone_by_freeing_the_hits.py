"""allocate_slots touches the hits, then checks the free blocks, and undoes the touch by freeing the hits.

The counts come out right: after the touch the revived hits are no longer free, so comparing the new
blocks with what is left is the same check. But freeing puts the hits back at the end of the free
queue, not where they were: a refused request reorders eviction, and the prefix it looked up, which
was due to go before the blocks behind it, now goes last. Symptom: after a refusal the free queue is
[4, 5, 3, 2, 1] instead of [4, 5, 2, 1, 3].
"""

CAUGHT_BY = ["test_a_refused_request_leaves_the_free_queue_in_its_order"]

EDIT = (
    "        num_evictable_hits = sum(block.ref_cnt == 0 for block in new_computed_blocks)\n"
    "        if num_new_blocks + num_evictable_hits > self.block_pool.get_num_free_blocks():\n"
    "            return None  # checked before anything changes: the scheduler may simply try again later\n"
    "\n"
    "        self.block_pool.touch(new_computed_blocks)\n",
    "        self.block_pool.touch(new_computed_blocks)  # taken first, given back if the request does not fit\n"
    "        if num_new_blocks > self.block_pool.get_num_free_blocks():\n"
    "            self.block_pool.free_blocks(reversed(new_computed_blocks))\n"
    "            return None\n",
)
