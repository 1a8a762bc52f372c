"""cache_full_blocks never checks 0 <= num_cached_blocks <= num_full_blocks.

A caller's bookkeeping error (counts swapped, a cached count of -1) is not refused: the slice
``blocks[num_cached_blocks:num_full_blocks]`` is simply empty, and the call returns having cached
nothing. Symptom: cache_full_blocks(blocks, keys, 2, 1) raises no ValueError, and the blocks the
caller meant to share are never found by a lookup.
"""

CAUGHT_BY = ["test_cache_full_blocks_indexes_only_the_new_full_blocks"]

EDIT = (
    "        if not 0 <= num_cached_blocks <= num_full_blocks:\n",
    "        if False:  # the range is never checked\n",
)
