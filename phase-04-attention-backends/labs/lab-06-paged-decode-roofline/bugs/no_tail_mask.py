"""No tail mask: every token of the last block is treated as valid, up to the block's end,
not up to seq_len.

Symptom: right only when seq_len is a multiple of the block size; with poisoned slots the
output is far off (or NaN).
"""

CAUGHT_BY = ["test_one_split_matches_reference"]

EDIT = (
    "        valid = token < end\n",
    "        valid = token < tl.cdiv(end, BLOCK_SIZE) * BLOCK_SIZE  # the whole last block\n",
)
