"""touch() takes every block out of the free queue, even one that is held and so not in the queue.

Sharing a block that a running request holds (ref_cnt >= 1) is the common case of a prefix hit;
that block is not in the free queue, and removing it fails (here with the queue's ValueError; a
remove without that check would unlink a None neighbour or corrupt the list). Symptom: the second
request to share a running request's prefix gets "not in the free queue".
"""

CAUGHT_BY = ["test_shared_block_stays_held_until_the_last_free", "test_random_interleavings_keep_the_invariants"]

EDIT = (
    "            if block.ref_cnt == 0:\n                self.free_block_queue.remove(block)\n",
    "            self.free_block_queue.remove(block)  # whether or not it is free\n",
)
