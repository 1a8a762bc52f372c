"""touch increments ref_cnt only for a block that was free (the increment sits inside the if).

A free block that is revived gets ref_cnt 1, right; but a block already held by a running request
stays at 1 when a second request shares it. When the first request finishes, the block goes back
to the free queue and is handed out while the second still reads it. Symptom: a shared block with
ref_cnt 1.
"""

CAUGHT_BY = ["test_shared_block_stays_held_until_the_last_free", "test_random_interleavings_keep_the_invariants"]

EDIT = (
    "                self.free_block_queue.remove(block)\n"
    "            block.ref_cnt += 1\n",
    "                self.free_block_queue.remove(block)\n"
    "                block.ref_cnt += 1  # only for a block that was free\n",
)
