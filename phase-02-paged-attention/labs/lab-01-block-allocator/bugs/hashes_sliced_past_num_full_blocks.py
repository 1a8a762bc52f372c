"""cache_full_blocks takes the keys from num_cached_blocks to the end, not to num_full_blocks.

The keys of a sequence may run ahead of the blocks being cached (all its full blocks have keys,
the caller caches the first one now). Sliced to the end, the keys outnumber the blocks they are
paired with, and the strict pairing refuses a valid call. Symptom:
cache_full_blocks(blocks, keys_of_3_blocks, 0, 1) raises ValueError.
"""

CAUGHT_BY = ["test_cache_full_blocks_indexes_only_the_new_full_blocks"]

EDIT = (
    "        new_hashes = block_hashes[num_cached_blocks:num_full_blocks]\n",
    "        new_hashes = block_hashes[num_cached_blocks:]\n",
)
