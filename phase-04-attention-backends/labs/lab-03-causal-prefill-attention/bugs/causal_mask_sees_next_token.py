"""Causal mask off by one the other way: row ``i`` also sees position ``start + i + 1``.

Every row but the last reads one token of its own future, a real token of the chunk, so the
answer is a little wrong; the last row reads the slot after the chunk, which holds poison in
the tests, so it is very wrong (huge) or NaN.
"""

CAUGHT_BY = [
    "test_causal_mask_bounds",
    "test_future_positions_are_poisoned",
    "test_chunked_equals_one_shot",
    "test_chunk_after_a_scattered_prefix",
]

EDIT = (
    "    return keys[None, :] - np.arange(num_queries)[:, None] <= start\n",
    "    return keys[None, :] - np.arange(num_queries)[:, None] <= start + 1  # BUG: one future token\n",
)
