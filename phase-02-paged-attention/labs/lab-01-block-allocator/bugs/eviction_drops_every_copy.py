"""Evicting one block deletes its key from the index outright, with every other copy cached under it.

Without de-duplication two blocks may hold the same tokens under one key (two requests computed them
at once). Evicting the first must remove only its own entry of {block_id: block}; deleting the whole
key forgets the second copy, which still holds the tokens and keeps its hash: a later request misses
a prefix that is in the cache. Symptom: get_cached_block(key) is None while a block still has that key.
"""

CAUGHT_BY = ["test_block_ids_are_stable", "test_random_interleavings_keep_the_invariants"]

EDIT = (
    "        del same_hash[block.block_id]\n",
    "        same_hash.clear()  # every copy of the key, not only this block's entry\n",
)
