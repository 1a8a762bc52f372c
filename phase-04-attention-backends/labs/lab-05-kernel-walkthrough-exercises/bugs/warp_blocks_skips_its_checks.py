"""warp_blocks does not check block_size, num_warps and seq_len.

block_size 0 divides by zero, a num_warps of 2.5 gives fractional blocks, a negative seq_len an
empty answer. Symptom: ZeroDivisionError, a float array or silence instead of a ValueError naming
the argument.
"""

CAUGHT_BY = ["test_warp_blocks_reject_bad_input"]

EDITS = [
    ("    _check_positive(\"block_size\", block_size)\n    _check_positive(\"num_warps\", num_warps)\n"
     "    if not 0 <= warp < num_warps:\n", "    if not 0 <= warp < num_warps:\n"),
    ("    if seq_len < 0:\n        raise ValueError(f\"seq_len={seq_len} is negative\")\n", ""),
]
