"""Kernel: the tile's token index computed with ``/`` instead of ``//`` (``first + r / GROUP``).

Triton's ``/`` on integers is a true division: the token index becomes a float32, and so do the
row offsets built from it (``chunk_start + token``). Every comparison and the truncation to int64
still give the right rows while they are below 2**24; past that float32 holds no odd integer, and
a chunk that starts at row 2**24 + 1 of ``q`` is read from, and written to, the row before it.
"""

CAUGHT_BY = ["test_kernel_rows_of_q_past_2_24"]

EDIT = (
    "    token = first + r // GROUP\n",
    "    token = first + r / GROUP  # BUG: a true division, a float32 token index\n",
)
