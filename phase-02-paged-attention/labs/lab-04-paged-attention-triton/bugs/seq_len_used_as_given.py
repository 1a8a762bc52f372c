"""Both functions call the given checks but keep computing with ``seq_len`` as it came.

``_check_inputs`` accepts any numpy integer and returns the length as a Python int. Thrown away, the
caller's own type goes on: in the reference an unsigned one (a length read out of a ``uint32`` array)
wraps around under ``-seq_len``, so ``-(-seq_len // block_size)`` asks for billions of blocks; the
kernel is launched with a numpy scalar, which Triton's interpreter refuses. Symptom: right for an int;
an IndexError past the end of the table (reference) or a TypeError at the launch (kernel) otherwise.
"""

CAUGHT_BY = ["test_seq_len_of_any_integer_type"]

EDITS = [
    ("    seq_len = _check_inputs(q, k_cache, v_cache, block_table, seq_len, for_triton=False)  # a Python int\n",
     "    _check_inputs(q, k_cache, v_cache, block_table, seq_len, for_triton=False)  # BUG: its int unused\n"),
    ("    seq_len = _check_inputs(q, k_cache, v_cache, block_table, seq_len, for_triton=True)  # a Python int\n",
     "    _check_inputs(q, k_cache, v_cache, block_table, seq_len, for_triton=True)  # BUG: its int unused\n"),
]
