"""Hopper kernel: each page fetched at its logical index, the block table never read.

The descriptor's first coordinate must be the physical block, ``block_tables[seq, logical]``; with
the logical index the kernel reads pool blocks 0, 1, 2... as if the cache were contiguous. Symptom:
wrong outputs for any table that is not the identity (every test's tables are shuffled).
"""

SOURCE = "going-further/hopper_decode.py"

CAUGHT_BY = ["test_one_split_matches_reference", "test_gqa_grouping"]

EDIT = (
    "    return desc.load([block, 0, kv_head, 0]).reshape(BLOCK_SIZE, HEAD_DIM)\n",
    "    return desc.load([logical, 0, kv_head, 0]).reshape(BLOCK_SIZE, HEAD_DIM)\n",
)
