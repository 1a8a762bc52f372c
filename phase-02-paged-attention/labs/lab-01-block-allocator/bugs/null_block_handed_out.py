"""Block 0 is marked as the null block but left in the free queue.

The null block is a placeholder: a block-table entry that points at it means "no block here"
(vLLM fills skipped sliding-window blocks with it). Left in the free queue, it is the first block
handed out, to a request that writes its KV there. Symptom: a fresh pool of 8 has 8 free blocks and
get_new_blocks returns block 0.
"""

CAUGHT_BY = [
    "test_null_block_is_reserved",
    "test_get_new_blocks_takes_the_front",
    "test_usage_leaves_out_the_null_block",
    "test_random_interleavings_keep_the_invariants",
]

EDIT = (
    "        self.null_block = self.free_block_queue.popleft()\n",
    "        self.null_block = self.blocks[0]  # marked null, but still in the free queue\n",
)
