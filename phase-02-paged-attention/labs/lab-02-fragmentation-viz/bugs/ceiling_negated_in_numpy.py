"""blocks_needed negates the token count as given, in its numpy dtype, instead of as a Python int.

``-(-num_tokens // block_size)`` is exact for Python ints, but a count read out of an array is a numpy
integer, which wraps around: ``-np.uint64(17)`` is 2**64 - 17. Symptom: blocks_needed(np.uint64(17), 16)
is a huge number instead of 2.
"""

CAUGHT_BY = ["test_blocks_needed_takes_numpy_integers"]

EDIT = (
    "    return -(-int(num_tokens) // block_size)  # ceiling division in integers: no float rounding\n",
    "    return -(-num_tokens // block_size)  # in num_tokens' own type\n",
)
