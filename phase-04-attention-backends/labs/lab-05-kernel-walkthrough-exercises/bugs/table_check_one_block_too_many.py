"""The width check asks for ``seq_len // block_size + 1`` blocks, one too many at exact multiples.

Symptom: a table exactly as wide as its longest sequence needs is refused when that
sequence fills its last block; a padded table (one spare column) hides the mistake.
"""

CAUGHT_BY = ["test_slot_mapping_matches_brute_force"]

EDIT = (
    '    need = blocks_per_seq(lens, block_size)\n',
    '    need = lens // block_size + 1  # BUG: one block too many when seq_len is a multiple\n',
)
