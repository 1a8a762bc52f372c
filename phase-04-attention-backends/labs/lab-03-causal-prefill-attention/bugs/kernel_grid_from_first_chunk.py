"""Kernel: the grid is sized from the first chunk's length instead of the longest chunk's.

Sequences whose chunk is longer than the first one get too few query tiles: their last rows are
never computed and keep whatever ``out`` held. Right whenever the first chunk is the longest.
"""

CAUGHT_BY = ["test_kernel_max_query_len_given_or_found"]

EDIT = (
    "        max_query_len = int((starts[1:] - starts[:-1]).max()) if num_seqs else 0\n",
    "        max_query_len = int(starts[1] - starts[0]) if num_seqs else 0  # BUG: the first chunk's length\n",
)
