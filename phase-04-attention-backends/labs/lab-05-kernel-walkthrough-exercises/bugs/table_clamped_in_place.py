"""The caller's block table is clamped in place (negative padding ids set to block 0).

Symptom: the slots are right, but the caller's table has changed under it: a table that
used -1 as padding now points the padding at block 0. The tests hand the table over
read-only, so the write raises.
"""

CAUGHT_BY = ["test_slot_mapping_matches_brute_force", "test_slot_mapping_pads_with_minus_one"]

EDIT = (
    '    tables = np.asarray(block_tables)\n',
    '    tables = np.asarray(block_tables)\n'
    "    np.maximum(tables, 0, out=tables)  # BUG: writes into the caller's table\n",
)
