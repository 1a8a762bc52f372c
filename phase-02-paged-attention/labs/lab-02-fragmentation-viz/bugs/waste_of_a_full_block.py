"""Internal fragmentation computed as ``block_size - num_tokens % block_size``.

Symptom: a request that fills its blocks exactly (16 tokens in blocks of 16) is said to waste
a whole block, and a request with no tokens wastes 16 slots of a block it does not have.
"""

CAUGHT_BY = [
    "test_internal_fragmentation_is_the_tail_of_the_last_block",
    "test_block_size_tradeoff_hand_computed",
    "test_block_size_tradeoff_matches_brute_force",
]

EDIT = (
    '    return blocks_needed(num_tokens, block_size) * int(block_size) - int(num_tokens)\n',
    '    return block_size - num_tokens % block_size\n',
)
