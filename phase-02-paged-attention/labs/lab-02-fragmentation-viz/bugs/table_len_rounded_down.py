"""The mean block-table length is computed with an integer division.

Symptom: 8 instead of 8.75 blocks per request for blocks of 4: the mean loses its fraction.
"""

CAUGHT_BY = ["test_block_size_tradeoff_hand_computed", "test_block_size_tradeoff_matches_brute_force"]

EDIT = (
    '        table_len.append(sum(tables) / len(tables))\n',
    '        table_len.append(sum(tables) // len(tables))\n',
)
