"""The block key hashes the block's own tokens only: the parent's key is left out of the chain.

A key then says "these 16 tokens", not "these 16 tokens after this prefix". Two prompts that differ
early but share a later block get the same key for it, and a prefix-cache lookup hands one request
the KV another request computed for a different context. Symptom: the same tokens after different
parents get equal keys.
"""

CAUGHT_BY = ["test_hash_covers_the_tokens_and_the_parent", "test_chained_keys_share_exactly_the_common_prefix"]

EDIT = (
    "    data = parent + b\"\".join(t.to_bytes(8, \"little\") for t in tokens)\n",
    "    data = b\"\".join(t.to_bytes(8, \"little\") for t in tokens)  # the parent is left out\n",
)
