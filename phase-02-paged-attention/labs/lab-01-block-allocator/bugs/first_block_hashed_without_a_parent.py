"""A first block is hashed from its tokens alone: None adds no parent bytes instead of NONE_HASH's.

Every later block hashes its parent's 32 bytes and then its tokens; a first block hashes its tokens
only. Token ids go up to 2**63, so four of them can spell a parent key P: the first block
[P's four 8-byte words] + B then gets the key of B after P. Symptom: two different (parent,
tokens) pairs with one key; a prompt that spells a key reads another request's KV. (A predictable
parent for first blocks, hash(None), was reported to vLLM as a security issue of this kind: its
NONE_HASH is now random bytes.)
"""

CAUGHT_BY = ["test_a_first_block_never_shares_a_key_with_a_later_block"]

EDIT = (
    "    parent = _check_parent_hash(parent_hash)\n",
    "    parent = b\"\" if parent_hash is None else _check_parent_hash(parent_hash)  # a first block: no parent\n",
)
