"""The waste fraction divides by the slots in use instead of the slots allocated.

Symptom: 6/134 instead of 6/140 for blocks of 4; the fraction can even exceed 1 for tiny requests
in big blocks, which a share of the allocation never does.
"""

CAUGHT_BY = ["test_block_size_tradeoff_hand_computed", "test_block_size_tradeoff_matches_brute_force"]

EDIT = (
    '        fraction.append(wasted / (sum(tables) * b))\n',
    '        fraction.append(wasted / sum(lengths))\n',
)
