"""build_slot_mapping counts tokens from 0 instead of from `start`.

Symptom: a prefill from position 0 is right; every later chunk and every decode
step overwrites the first tokens of the sequence, so attention after the second
chunk sees the wrong keys and unwritten (poisoned) slots.
"""

import numpy as np

from labkit.bugs import solution_with

CAUGHT_BY = ["test_slot_mapping_formula", "test_chunked_prefill_write_path"]


def build_slot_mapping(block_table, block_size, start, num_tokens):
    block_table = np.asarray(block_table, dtype=np.int64)
    t = np.arange(num_tokens, dtype=np.int64)  # BUG: should start at `start`
    return block_table[t // block_size] * block_size + t % block_size


globals().update(solution_with(__file__, build_slot_mapping=build_slot_mapping))
