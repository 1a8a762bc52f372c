"""slot = block_table[t % block_size] * block_size + t // block_size: `//` and `%` swapped.

Symptom: tokens land in the wrong blocks at the wrong offsets. Token 0 is still right, which
is why a test that writes a single token at the start passes; any range that reaches past the
first token fails.
"""

CAUGHT_BY = ["test_slot_mapping_formula", "test_write_then_gather_round_trips", "test_chunked_prefill_write_path"]

EDIT = (
    "    return block_table[t // block_size] * block_size + t % block_size\n",
    "    return block_table[t % block_size] * block_size + t // block_size  # // and % swapped\n",
)
