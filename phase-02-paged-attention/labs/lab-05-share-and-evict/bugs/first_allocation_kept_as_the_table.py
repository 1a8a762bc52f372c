"""The list of a request's first new blocks is kept as its block table, and returned.

When the table is empty (a new request without hits), ``req_to_blocks[id] = new_blocks`` looks like a
shortcut, but the list allocate_slots returns is then the table itself: the scheduler's list grows with every
later step that takes a block, and clearing or sorting it changes the table. Symptom: the list the
first call returned holds [1, 2, 3] after a decode step took block 3.
"""

CAUGHT_BY = ["test_the_returned_blocks_are_the_callers_own_list"]

EDIT = (
    "        new_blocks = self.block_pool.get_new_blocks(num_new_blocks)\n        req_blocks.extend(new_blocks)\n",
    "        new_blocks = self.block_pool.get_new_blocks(num_new_blocks)\n"
    "        if not req_blocks:\n"
    "            self.req_to_blocks[request.request_id] = req_blocks = new_blocks  # the first blocks are the table\n"
    "        else:\n"
    "            req_blocks.extend(new_blocks)\n",
)
