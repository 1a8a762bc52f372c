"""allocate_slots takes its new blocks from the pool before it touches the prefix-cache hits.

A hit that waits in the free queue is still free until it is touched. When it sits at the front,
get_new_blocks pops it as the request's new block: its key is evicted, its ref count set to 1, and
the touch that follows makes it 2. The request holds one block twice and the block it should have
taken stays free. Symptom: a pool whose free queue starts with the hit gives the table [1, 1]
instead of [1, 2] (vLLM's test_computed_blocks_not_evicted).
"""

CAUGHT_BY = [
    "test_a_hit_at_the_front_of_the_free_queue_is_not_taken_back",
    "test_a_refused_request_leaves_the_free_queue_in_its_order",
]

EDITS = [
    ("        self.block_pool.touch(new_computed_blocks)\n        req_blocks = ",
     "        req_blocks = "),
    ("        new_blocks = self.block_pool.get_new_blocks(num_new_blocks)\n",
     "        new_blocks = self.block_pool.get_new_blocks(num_new_blocks)  # before the hits leave the queue\n"
     "        self.block_pool.touch(new_computed_blocks)\n"),
]
