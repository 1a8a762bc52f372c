"""get_computed_blocks touches the blocks it finds, as if the lookup were the allocation.

The lookup must change nothing: the scheduler may look a request up and then not admit it (no
room, a token budget spent). Touched there, the hits leave the free queue with a holder that never
frees them, and allocate_slots touches them a second time. Symptom: a lookup that changes ref
counts and the free queue.
"""

CAUGHT_BY = ["test_lookup_changes_nothing", "test_identical_prompts_share_physical_blocks"]

EDIT = (
    "        return computed_blocks, len(computed_blocks) * self.block_size\n",
    "        self.block_pool.touch(computed_blocks)  # taken at the lookup\n"
    "        return computed_blocks, len(computed_blocks) * self.block_size\n",
)
