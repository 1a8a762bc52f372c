"""remove() first checks that the block is in the queue by walking the list: O(n), like deque.remove.

The result is right, so every functional test passes; only the cost is wrong. collections.deque
(or a list) has the same flaw: .remove(x) searches from the front, comparing every element it
passes. A prefix-cache hit revives blocks from the middle of a queue of tens of thousands of free
blocks, once per hit block per request, in the scheduler's critical path. popleft() goes through
remove() here, so it becomes O(n) as well. Symptom: the counted link reads grow with the queue.
"""

CAUGHT_BY = ["test_free_queue_o1_middle_removal"]

EDIT = (
    "        if block.prev_free_block is None or block.next_free_block is None:\n"
    "            raise ValueError(f\"block {block.block_id} is not in the free queue\")\n",
    "        if block not in self.get_all_free_blocks():  # a search: O(n)\n"
    "            raise ValueError(f\"block {block.block_id} is not in the free queue\")\n",
)
