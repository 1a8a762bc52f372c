"""Padding positions given slot 0 instead of -1.

Symptom: slot 0 is the first slot of physical block 0, a real token of some sequence: a
kernel that writes the padding positions' keys overwrites it.
"""

CAUGHT_BY = ["test_slot_mapping_pads_with_minus_one", "test_slot_mapping_matches_brute_force"]

EDIT = (
    '    return np.where(t[None, :] < lens[:, None], slots, -1)\n',
    '    return np.where(t[None, :] < lens[:, None], slots, 0)  # BUG: 0 is a real slot\n',
)
