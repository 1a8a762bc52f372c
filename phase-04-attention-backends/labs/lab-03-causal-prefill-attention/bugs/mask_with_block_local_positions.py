"""The causal mask is asked about each block's slots (0 .. valid - 1), not the keys' positions.

Block ``b`` holds positions ``b * block_size ..``, but the mask is told they are ``0 .. valid - 1``,
so every block looks like the sequence's first: a row sees the early slots of every block, its
future included, and misses late slots of its own past. Right only when one block holds the
whole sequence.
"""

CAUGHT_BY = ["test_prefill_from_scratch_matches_causal_attention", "test_chunk_after_a_scattered_prefix",
             "test_chunked_equals_one_shot"]

EDIT = (
    "        visible = causal_mask(start, num_queries, np.arange(block_start, block_start + valid))  # [M, valid]\n",
    "        visible = causal_mask(start, num_queries, np.arange(valid))  # BUG: slots, not positions\n",
)
