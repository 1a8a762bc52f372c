"""The torch reference gathers the blocks of every entry of the table, then cuts the result to seq_len.

One indexing expression instead of a loop, and right whenever every entry of the table is a block of
the cache. But a batch's table is as wide as its longest sequence, and the entries past a shorter
sequence's blocks hold a pad id that names no block. Symptom: an IndexError on a table padded with an
id past the pool (and, on any table, the whole padded width copied every call).
"""

CAUGHT_BY = ["test_table_entries_past_the_sequence_are_never_read"]

EDIT = (
    "    table = block_table.tolist()\n"
    "    keys, values = [], []\n"
    "    for logical in range(-(-seq_len // block_size)):\n"
    "        physical = table[logical]\n"
    "        if not 0 <= physical < num_blocks:\n"
    "            raise ValueError(f\"block_table[{logical}] = {physical} is not a block of the cache "
    "(0..{num_blocks - 1})\")\n"
    "        tokens = range(logical * block_size, min((logical + 1) * block_size, seq_len))  # tail block: fewer\n"
    "        rows = [physical * block_size + t % block_size for t in tokens]\n"
    "        keys.append(k_rows[rows])\n"
    "        values.append(v_rows[rows])\n"
    "    k = torch.cat(keys).float()  # [seq_len, num_kv_heads, head_dim], dense now\n"
    "    v = torch.cat(values).float()\n",
    "    ids = block_table.long()  # BUG: every entry, the padding past the sequence too\n"
    "    k = k_cache[ids].reshape(-1, num_kv_heads, head_dim)[:seq_len].float()\n"
    "    v = v_cache[ids].reshape(-1, num_kv_heads, head_dim)[:seq_len].float()\n",
)
