"""slot = block_table[t] * block_size + t: the token index used as a block index, no `//`.

Symptom: token t is sent to the block listed at position t of the table (or past
its end: IndexError) and to offset t instead of t % block_size; only block_size=1
with an identity-like table hides it.
"""

import numpy as np

from labkit.bugs import solution_with

CAUGHT_BY = ["test_slot_mapping_formula", "test_write_then_gather_round_trips", "test_chunked_prefill_write_path"]


def build_slot_mapping(block_table, block_size, start, num_tokens):
    block_table = np.asarray(block_table, dtype=np.int64)
    t = np.arange(start, start + num_tokens, dtype=np.int64)
    return block_table[t] * block_size + t  # BUG: should be [t // block_size] and t % block_size


globals().update(solution_with(__file__, build_slot_mapping=build_slot_mapping))
