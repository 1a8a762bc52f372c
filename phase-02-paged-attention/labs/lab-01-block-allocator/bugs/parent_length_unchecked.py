"""_check_parent_hash refuses a parent only when it is neither bytes nor 32 long.

``or`` became ``and``: bytes of any length pass as a parent's key (a truncated key, a hex digest
encoded to bytes). Symptom: no ValueError for ``hash_block_tokens(b"short", ...)``; the key is
computed from a parent that is no key.
"""

CAUGHT_BY = ["test_hash_rejects_bad_input"]

EDIT = (
    "    if not isinstance(parent_hash, bytes) or len(parent_hash) != len(NONE_HASH):\n",
    "    if not isinstance(parent_hash, bytes) and len(parent_hash) != len(NONE_HASH):\n",
)
