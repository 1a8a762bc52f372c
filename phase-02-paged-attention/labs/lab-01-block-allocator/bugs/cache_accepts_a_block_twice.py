"""cache_full_blocks checks each block against the pool alone, so a block listed twice is cached twice.

Each block is checked before anything changes (null? already hashed?), but not against the other
blocks of the call: in [block 1, block 3, block 1] block 1 has no hash at both places, so it is
indexed under two keys. When it is evicted only its current key leaves the index, and the other
key goes on naming a block that now holds other tokens. Symptom: no ValueError for a block listed
twice.
"""

CAUGHT_BY = ["test_a_refusal_mid_list_changes_nothing"]

EDIT = (
    "            if block.is_null or block.block_hash is not None or id(block) in listed:\n",
    "            if block.is_null or block.block_hash is not None:\n",
)
