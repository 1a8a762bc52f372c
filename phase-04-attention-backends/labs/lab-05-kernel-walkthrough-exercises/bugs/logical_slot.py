"""The block table skipped: slot = logical block * block_size + offset, i.e. the token's position.

Symptom: right only when the table happens to be 0, 1, 2, ...; with scattered blocks
every sequence reads (and writes) another sequence's cache.
"""

import numpy as np

from labkit.bugs import solution_with

CAUGHT_BY = ["test_slot_mapping_matches_brute_force", "test_slot_mapping_of_the_corrected_source_example"]


def slot_mapping(block_tables, seq_lens, block_size):
    lens = np.asarray(seq_lens, dtype=np.int64)
    max_len = int(lens.max()) if lens.size else 0
    t = np.arange(max_len)
    slots = (t // block_size) * block_size + t % block_size
    return np.where(t[None, :] < lens[:, None], slots[None, :], -1)


globals().update(solution_with(__file__, slot_mapping=slot_mapping))
