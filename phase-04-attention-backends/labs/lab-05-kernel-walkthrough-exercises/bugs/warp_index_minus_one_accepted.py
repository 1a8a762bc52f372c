"""warp_blocks accepts warp -1: the range check starts at -1 instead of 0.

Warp -1 then visits blocks start - 1, start - 1 + num_warps, ...: block -1 does not exist, and
the blocks it lists belong to the last warp. Symptom: no ValueError for warp=-1.
"""

CAUGHT_BY = ["test_warp_blocks_reject_bad_input"]

EDIT = (
    "    if not 0 <= warp < num_warps:\n",
    "    if not -1 <= warp < num_warps:\n",
)
