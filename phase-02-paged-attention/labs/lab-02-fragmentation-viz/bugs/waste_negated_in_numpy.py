"""internal_fragmentation takes the shortcut ``-num_tokens % block_size`` with the count still a numpy integer.

In Python ints, ``-n % b`` is exactly the unused end of the last block. A count read out of an array
is a numpy integer, and ``-np.uint64(17)`` wraps around to 2**64 - 17: by a power of two the
remainder still comes out right, by any other block size it does not. Symptom:
internal_fragmentation(np.uint64(17), 3) is 2 (with an overflow warning) instead of 1.
"""

CAUGHT_BY = ["test_internal_fragmentation_is_the_tail_of_the_last_block"]

EDIT = (
    "    return blocks_needed(num_tokens, block_size) * int(block_size) - int(num_tokens)\n",
    "    return -num_tokens % int(block_size)  # the slots up to the next block boundary\n",
)
