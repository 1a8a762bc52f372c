"""Slots computed in the block table's int32.

Symptom: right for every cache of fewer than 2**31 slots; past that (block 2**27 of blocks
of 32 tokens) block id * block_size wraps around in int32 before the offset (an int64
arange) is added, and the slot points at the wrong place. The dtype alone does not show it.
"""

CAUGHT_BY = ["test_slot_mapping_of_block_ids_past_2_31_slots"]

EDIT = (
    '    physical_block = tables[:, logical_block].astype(np.int64)\n',
    '    physical_block = tables[:, logical_block]  # BUG: int32\n',
)
