"""internal_fragmentation computes ``-n % block_size`` in Python ints without checking its arguments.

The remainder is right for every valid count, but nothing refuses an invalid one: a block size of 0
is a ZeroDivisionError from inside the arithmetic, and -1 tokens come out as 1 wasted slot.
Symptom: no ValueError naming num_tokens for internal_fragmentation(-1, 16).
"""

CAUGHT_BY = ["test_each_bad_argument_is_named"]

EDIT = (
    "    return blocks_needed(num_tokens, block_size) * int(block_size) - int(num_tokens)\n",
    "    return -int(num_tokens) % int(block_size)  # the slots up to the next block boundary\n",
)
