"""The block table skipped: slot = logical block * block_size + offset, i.e. the token's position.

Symptom: right only when the table happens to be 0, 1, 2, ...; with scattered blocks every
sequence reads (and writes) another sequence's cache.
"""

CAUGHT_BY = ["test_slot_mapping_matches_brute_force", "test_slot_mapping_of_the_corrected_source_example"]

EDIT = (
    '    slots = physical_block * block_size + offset\n',
    '    slots = logical_block[None, :] * block_size + offset  # BUG: the table is never read\n',
)
