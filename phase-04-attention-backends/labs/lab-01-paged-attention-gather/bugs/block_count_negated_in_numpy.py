"""The loop counts its blocks as ``-(-seq_len // block_size)`` in the lengths' own numpy dtype.

The ceiling is exact for Python ints and for numpy's signed integers, but a length read out of an
unsigned array wraps around when negated: ``-np.uint64(10)`` is 2**64 - 10, so the loop is asked
for a nonsense number of blocks and walks off the end of the table. Symptom: an overflow warning,
then an IndexError, for seq_len=np.uint64(10), block_size=np.uint64(4).
"""

CAUGHT_BY = ["test_takes_numpy_integers"]

EDIT = (
    "    for start in range(0, seq_len, block_size):\n"
    "        physical = block_table[start // block_size]\n",
    "    for b in range(-(-seq_len // block_size)):  # the blocks that cover [0, seq_len)\n"
    "        start = b * block_size\n"
    "        physical = block_table[b]\n",
)
