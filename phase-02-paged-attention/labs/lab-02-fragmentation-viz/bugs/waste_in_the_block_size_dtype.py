"""internal_fragmentation multiplies the block count by block_size as given, a numpy integer or not.

A Python int times np.int32(16) is an int32 under numpy's rules: 2**27 blocks of 16 overflow it
(a warning, then a wrapped-around product), and 2**36 blocks are refused outright. Symptom:
OverflowError for internal_fragmentation(2**40 + 1, np.int32(16)).
"""

CAUGHT_BY = ["test_internal_fragmentation_is_the_tail_of_the_last_block"]

EDIT = (
    "    return blocks_needed(num_tokens, block_size) * int(block_size) - int(num_tokens)\n",
    "    return blocks_needed(num_tokens, block_size) * block_size - num_tokens\n",
)
