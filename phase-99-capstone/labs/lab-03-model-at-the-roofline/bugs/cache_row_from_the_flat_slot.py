"""The cache row of a slot computed as ``slot * stride_slot``, as if the blocks followed each other.

Right for a contiguous cache (a block's stride is ``block_size`` slots), wrong for the views an
engine passes: K and V as ``kv[:, 0]``, ``kv[:, 1]`` of one fused pool (a block's stride is two
blocks), a pool stored heads outside the slots. Keys and values land in the other cache's blocks
or in other rows.
"""

CAUGHT_BY = ["test_rotary_and_cache_contract"]

EDIT = (
    "    cache_row = (slot // block_size) * stride_block + (slot % block_size) * stride_slot  # [ROWS]\n",
    "    cache_row = slot * stride_slot  # [ROWS]\n",
)
