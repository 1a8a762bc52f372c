"""The block ids and the keys are loaded without the token mask, trusting the scores' mask to hide
whatever the tile's tokens past ``seq_len`` read (the values keep theirs).

Symptom: right while the table's padding holds ids of real blocks (their poison is masked out of
the scores); an engine's padding may hold any id, and then the kernel reads outside the pool: an
illegal memory access on a GPU, a crash or an error on the interpreter.
"""

CAUGHT_BY = ["test_table_entries_past_a_sequence_are_never_used"]

EDITS = [
    ("        block = tl.load(table + token // BLOCK_SIZE, mask=valid, other=0).to(tl.int64)\n",
     "        block = tl.load(table + token // BLOCK_SIZE).to(tl.int64)\n"),
    ("        k = tl.load(k_cache_ptr + rows_kv[:, None] + dims[None, :], mask=valid[:, None], other=0.0)\n",
     "        k = tl.load(k_cache_ptr + rows_kv[:, None] + dims[None, :])\n"),
]
