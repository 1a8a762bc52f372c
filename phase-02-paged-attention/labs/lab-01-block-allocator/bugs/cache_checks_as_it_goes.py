"""cache_full_blocks checks each block as it caches it, so the blocks before a bad one are cached.

cache_full_blocks([fresh, already cached, fresh], ...) raises at the second block, after the first
got a hash and an index entry that no caller knows of: the caller will try to cache it again (and
be refused), and its key may now point at a block whose tokens are not all written. Symptom: after
a refused call, a block is hashed and indexed.
"""

CAUGHT_BY = ["test_a_refusal_mid_list_changes_nothing"]

EDITS = [
    ("        listed = set()  # a block twice in the range would be indexed under two keys and evicted from one\n"
     "        for block in new_full_blocks:\n"
     "            if block.is_null or block.block_hash is not None or id(block) in listed:\n"
     "                raise ValueError(f\"blocks: block {block.block_id} is the null block, already cached, or listed "
     "twice\")\n"
     "            listed.add(id(block))\n",
     ""),
    ("        for block, block_hash in zip(new_full_blocks, new_hashes, strict=True):\n",
     "        for block, block_hash in zip(new_full_blocks, new_hashes, strict=True):\n"
     "            if block.is_null or block.block_hash is not None:  # checked as it goes\n"
     "                raise ValueError(f\"blocks: block {block.block_id} is the null block or already cached\")\n"),
]
