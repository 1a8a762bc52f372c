"""The mask ignores ``start``: query row ``i`` is taken to sit at position ``i``.

Right for a prompt from scratch (start = 0); after a cached prefix every row of the chunk sees
only the first keys of the sequence (row i sees tokens 0 .. i) instead of the prefix and the
chunk up to itself. The classic "my prefill kernel works, chunked prefill gives garbage".
"""

CAUGHT_BY = [
    "test_causal_mask_bounds",
    "test_chunk_after_a_scattered_prefix",
    "test_chunked_equals_one_shot",
    "test_a_one_token_chunk_is_a_decode_step",
]

EDIT = (
    "    return keys[None, :] - np.arange(num_queries)[:, None] <= start\n",
    "    return keys[None, :] - np.arange(num_queries)[:, None] <= 0  # BUG: positions counted from the chunk\n",
)
