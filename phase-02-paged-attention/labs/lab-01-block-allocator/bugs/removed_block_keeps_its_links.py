"""remove unlinks the block from its neighbours but leaves the block's own two links set.

The queue itself is right afterwards, but the block still points into it: it looks queued
(append refuses it: "already in the free queue"), and a later remove of it would unlink its old
neighbours a second time. Symptom: a popped or removed block whose prev/next are not None.
"""

CAUGHT_BY = ["test_popleft_and_append_keep_fifo_order", "test_free_queue_o1_middle_removal"]

EDIT = (
    "        block.prev_free_block = block.next_free_block = None\n",
    "",
)
