"""slot = block_table[t % block_size] * block_size + t // block_size: `//` and `%` swapped.

Symptom: tokens land in the wrong blocks at the wrong offsets. Token 0 is still
right, which is why a test that writes a single token at the start passes; any
range that reaches past the first token fails.
"""

import numpy as np

from labkit.bugs import solution_with

CAUGHT_BY = ["test_slot_mapping_formula", "test_write_then_gather_round_trips", "test_chunked_prefill_write_path"]


def build_slot_mapping(block_table, block_size, start, num_tokens):
    block_table = np.asarray(block_table, dtype=np.int64)
    t = np.arange(start, start + num_tokens, dtype=np.int64)
    return block_table[t % block_size] * block_size + t // block_size  # BUG: swapped


globals().update(solution_with(__file__, build_slot_mapping=build_slot_mapping))
