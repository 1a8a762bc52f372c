"""cache_full_blocks() caches every full block from block 0 on, not only the newly full ones.

Called again after a request grows, it tries to hash blocks that are already cached (or, with
the check removed, indexes them twice). num_cached_blocks is the caller's record of how far
caching got; vLLM's manager keeps it per request (num_cached_block). Symptom: the second call
for a growing sequence fails with "already cached".
"""

CAUGHT_BY = ["test_cache_full_blocks_indexes_only_the_new_full_blocks", "test_random_interleavings_keep_the_invariants"]

EDITS = [
    ("        new_full_blocks = blocks[num_cached_blocks:num_full_blocks]\n",
     "        new_full_blocks = blocks[:num_full_blocks]  # from block 0 again\n"),
    ("        new_hashes = block_hashes[num_cached_blocks:num_full_blocks]\n",
     "        new_hashes = block_hashes[:num_full_blocks]\n"),
]
