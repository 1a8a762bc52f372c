"""hash_request_tokens hashes every block as if it were a first block (parent None).

hash_block_tokens itself is right, but the loop never passes the previous key on: the key of
block i then covers its own tokens only, and the same 16 tokens after two different prompts hit
each other's cache. Symptom: key i is not hash_block_tokens(key i - 1, ...); two prompts that
differ in block 2 share the key of block 3.
"""

CAUGHT_BY = ["test_only_full_blocks_are_hashed", "test_chained_keys_share_exactly_the_common_prefix"]

EDIT = (
    "        parent = hash_block_tokens(parent, token_ids[i * block_size : (i + 1) * block_size])\n",
    "        parent = hash_block_tokens(None, token_ids[i * block_size : (i + 1) * block_size])  # no chain\n",
)
