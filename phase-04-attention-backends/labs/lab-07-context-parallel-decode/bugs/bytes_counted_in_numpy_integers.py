"""combine_bytes evaluates its formulas in the arguments' own type, not in Python's integers.

The given check hands the counts back as Python integers, and this version leaves them unused: with
numpy integers for arguments (the check takes any integer), every product is numpy int64 arithmetic,
which wraps around past 2**63 - 1 with no more than a warning. Symptom: a batch of 2**62 on 4 ranks,
every argument fitting in int64, gives 0 or a negative byte count instead of the exact one.
"""

CAUGHT_BY = ["test_combine_bytes_counts_past_int64"]

EDIT = (
    "    world_size, batch, num_heads, head_dim, itemsize = _check_combine_bytes_args(\n"
    "        method, world_size, batch, num_heads, head_dim, itemsize)\n",
    "    _check_combine_bytes_args(method, world_size, batch, num_heads, head_dim, itemsize)\n",
)
