"""Each new block is hashed on its own tokens alone, not chained to the block before it.

Two requests whose k-th blocks hold the same 16 tokens after different prefixes get the same key: a
prefix-cache hit on keys computed in another context.
"""

CAUGHT_BY = ["test_block_hashes_extend_one_block_at_a_time"]

EDIT = (
    "            parent = _blocks.hash_block_tokens(parent, tokens[i * size : (i + 1) * size])\n",
    "            parent = _blocks.hash_block_tokens(None, tokens[i * size : (i + 1) * size])  # no chain\n",
)
