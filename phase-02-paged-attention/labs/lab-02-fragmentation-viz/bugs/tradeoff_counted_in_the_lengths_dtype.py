"""block_size_tradeoff counts blocks on the lengths array as given, in its own numpy dtype.

The checked lengths (Python ints) are dropped, and the ceiling is taken on the caller's array:
``-(-lengths // b)``. In an unsigned dtype the negation wraps around (-17 is 2**16 - 17 in uint16),
and a block size of 256 does not even fit a uint8. Symptom: lengths as a uint16 array give block
tables of tens of thousands of blocks.
"""

CAUGHT_BY = ["test_block_size_tradeoff_takes_any_integer_dtype"]

EDITS = [
    (
        "    lengths = _check_lengths(lengths)\n    if not lengths:\n",
        "    _check_lengths(lengths)\n    if not len(lengths):\n",
    ),
    (
        "        tables = [blocks_needed(n, b) for n in lengths]\n",
        "        tables = -(-np.asarray(lengths) // b)  # every request at once\n",
    ),
]
