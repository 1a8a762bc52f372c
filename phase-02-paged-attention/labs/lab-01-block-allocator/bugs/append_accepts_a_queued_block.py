"""append() does not check that the block is out of the queue before linking it at the back.

Appending a block that is already queued (a double free that got past the pool) rewires its links
to the back while its old neighbours still point at it: the list now reaches it twice, or loops,
and num_free_blocks counts it twice. Symptom: appending a queued block raises nothing and the walk
of the list no longer matches the count.
"""

CAUGHT_BY = ["test_queue_rejects_blocks_in_the_wrong_state"]

EDIT = (
    "        if block.prev_free_block is not None or block.next_free_block is not None:\n"
    "            raise ValueError(f\"block {block.block_id} is already in the free queue\")\n"
    "        last = self.fake_free_list_tail.prev_free_block\n",
    "        last = self.fake_free_list_tail.prev_free_block\n",
)
