"""Every key of the sequence is gathered through the table first, then one ordinary softmax per row.

The numbers are right: it is exact attention. But it is not the lab's algorithm: every row's
whole score list exists at once, which for a long context is the memory a streaming kernel
never needs (and a Triton kernel cannot hold). The recurrence runs once, over one "block" that
holds every key.
"""

CAUGHT_BY = ["test_streams_block_by_block"]

EDITS = [
    (
        "    for block_start in range(0, seq_len, block_size):\n"
        "        physical = block_table[block_start // block_size]\n"
        "        valid = min(block_size, seq_len - block_start)  # the last block may be partial\n"
        "        k_block = np.asarray(k_cache[physical, :valid], dtype=np.float64)  # [valid, num_kv_heads, head_dim]\n"
        "        v_block = np.asarray(v_cache[physical, :valid], dtype=np.float64)\n",
        "    for tokens in [np.arange(seq_len)]:  # BUG: one pass over every key, gathered first\n"
        "        physical, slot = block_table[tokens // block_size], tokens % block_size\n"
        "        k_block = np.asarray(k_cache[physical, slot], dtype=np.float64)  # [seq_len, num_kv_heads, head_dim]\n"
        "        v_block = np.asarray(v_cache[physical, slot], dtype=np.float64)\n",
    ),
    ("np.arange(block_start, block_start + valid))  # [M, valid]", "tokens)  # [M, seq_len]"),
]
