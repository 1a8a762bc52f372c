"""Hopper kernel: the page box placed at KV head 0 for every group of query heads.

The box ``[1, block_size, 1, head_dim]`` must sit at the program's KV head: coordinate
``(block, 0, kv_head, 0)``. At ``(block, 0, 0, 0)`` every group attends to head 0's keys and values.
Symptom: right with one KV head (multi-query attention), wrong as soon as there are two.
"""

SOURCE = "going-further/hopper_decode.py"

CAUGHT_BY = ["test_gqa_grouping", "test_one_split_matches_reference"]

EDIT = (
    "    return desc.load([block, 0, kv_head, 0]).reshape(BLOCK_SIZE, HEAD_DIM)\n",
    "    return desc.load([block, 0, 0, 0]).reshape(BLOCK_SIZE, HEAD_DIM)\n",
)
