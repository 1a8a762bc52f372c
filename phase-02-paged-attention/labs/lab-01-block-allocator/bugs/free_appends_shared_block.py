"""free_blocks() puts every freed block in the free queue, even one another request still holds.

Invariant 1 breaks: a block with ref_cnt 1 sits in the free queue, the next get_new_blocks hands
it to a new request, and two requests write their KV into one block. Symptom: after one of two
holders frees a shared block, it is in the queue and handed out again.
"""

CAUGHT_BY = ["test_shared_block_stays_held_until_the_last_free", "test_random_interleavings_keep_the_invariants"]

EDIT = (
    "            block.ref_cnt -= 1\n"
    "            if block.ref_cnt == 0:\n"
    "                self.free_block_queue.append(block)\n",
    "            block.ref_cnt -= 1\n"
    "            if block.prev_free_block is None:  # not yet in the queue: put it there\n"
    "                self.free_block_queue.append(block)\n",
)
