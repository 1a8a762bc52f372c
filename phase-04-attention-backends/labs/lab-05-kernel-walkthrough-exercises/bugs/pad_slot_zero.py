"""Padding positions given slot 0 instead of -1.

Symptom: slot 0 is the first slot of physical block 0, a real token of some sequence:
a kernel that writes the padding positions' keys overwrites it.
"""

import numpy as np

from labkit import load_sibling
from labkit.bugs import solution_with

CAUGHT_BY = ["test_slot_mapping_pads_with_minus_one", "test_slot_mapping_matches_brute_force"]


def slot_mapping(block_tables, seq_lens, block_size):
    right = _solution.slot_mapping(block_tables, seq_lens, block_size)
    return np.where(right < 0, 0, right)


_solution = load_sibling(__file__)
globals().update(solution_with(__file__, slot_mapping=slot_mapping))
