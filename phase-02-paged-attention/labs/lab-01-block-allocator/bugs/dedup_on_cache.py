"""cache_full_blocks() de-duplicates: a block whose tokens are already cached is swapped for the older copy.

It saves a block, and breaks invariant 2: the request's block table changes after its KV was
written to the block being dropped, under a GPU that may already read the table. vLLM keeps both
copies for this reason (block tables are append-only). Symptom: the caller's list holds another
block after cache_full_blocks.
"""

CAUGHT_BY = ["test_block_ids_are_stable", "test_random_interleavings_keep_the_invariants"]

EDIT = (
    "        for block, block_hash in zip(new_full_blocks, new_hashes, strict=True):\n",
    "        for i, block_hash in enumerate(new_hashes, start=num_cached_blocks):\n"
    "            if self.get_cached_block(block_hash) is not None:  # already cached: share the older copy\n"
    "                older, blocks[i] = self.get_cached_block(block_hash), self.get_cached_block(block_hash)\n"
    "                self.touch([older])\n"
    "                self.free_blocks([new_full_blocks[i - num_cached_blocks]])\n"
    "                continue\n"
    "            block = blocks[i]\n",
)
