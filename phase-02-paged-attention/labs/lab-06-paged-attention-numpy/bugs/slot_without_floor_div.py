"""slot = block_table[t] * block_size + t: the token index used as a block index, no `//`.

Symptom: token t is sent to the block listed at position t of the table (or past its end:
IndexError) and to offset t instead of t % block_size; only block_size=1 with an identity-like
table hides it.
"""

CAUGHT_BY = ["test_slot_mapping_formula", "test_write_then_gather_round_trips", "test_chunked_prefill_write_path"]

EDIT = (
    "    return block_table[t // block_size] * block_size + t % block_size\n",
    "    return block_table[t] * block_size + t  # should be [t // block_size] and t % block_size\n",
)
