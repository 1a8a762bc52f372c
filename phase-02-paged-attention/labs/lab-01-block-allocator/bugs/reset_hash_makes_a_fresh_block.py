"""reset_hash resets the whole block, ref_cnt and links included, not only its hash.

Where get_new_blocks calls it, the block has just left the queue with ref_cnt 0 and no links, so
nothing shows; but a hash is also forgotten on blocks still in the free queue (vLLM's
reset_prefix_cache forgets every block's) or still held. There the reset cuts a queued block's
links, so the queue's walk skips past it, and sets a held block's count to 0, forgetting its
holders. Symptom: after reset_hash, a queued block has no links and a shared block ref_cnt 0.
"""

CAUGHT_BY = ["test_reset_hash_forgets_the_hash_and_nothing_else"]

EDIT = (
    "        self.block_hash = None\n",
    "        self.block_hash = None\n"
    "        self.ref_cnt = 0  # a reset block is a fresh block\n"
    "        self.prev_free_block = self.next_free_block = None\n",
)
