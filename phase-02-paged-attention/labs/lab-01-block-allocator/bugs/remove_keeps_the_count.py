"""remove() unlinks the block but does not decrement num_free_blocks.

The pool's free count (get_num_free_blocks) then overstates what the queue holds: the scheduler
admits a request for blocks that do not exist, and popleft() on a list that is empty but "has"
blocks hands out the tail sentinel. Symptom: num_free_blocks disagrees with the walk of the list.
"""

CAUGHT_BY = [
    "test_popleft_and_append_keep_fifo_order",
    "test_free_queue_o1_middle_removal",
    "test_null_block_is_reserved",
]

EDIT = (
    "        block.prev_free_block = block.next_free_block = None\n        self.num_free_blocks -= 1\n",
    "        block.prev_free_block = block.next_free_block = None  # num_free_blocks not decremented\n",
)
