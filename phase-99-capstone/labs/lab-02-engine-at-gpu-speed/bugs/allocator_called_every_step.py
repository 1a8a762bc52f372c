"""Every running request asks the KV-cache manager for blocks at every step.

Right tokens, at lab 99-01's cost: most decodes need no block (15 steps in 16 with blocks of 16), and
each call still checks, counts and looks for full blocks to cache.
"""

CAUGHT_BY = ["test_decodes_skip_the_allocator_until_a_block_fills"]

EDIT = (
    "        if request.num_computed_tokens + num_new_tokens <= len(request.block_ids) * self.block_size:\n"
    "            return []\n",
    "",
)
