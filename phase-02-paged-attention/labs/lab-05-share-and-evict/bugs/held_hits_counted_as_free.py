"""allocate_slots counts every hit against the free blocks, including hits that running requests hold.

A hit with ref_cnt >= 1 is not in the free queue: sharing it costs no free block. Counting it
anyway refuses requests that fit, exactly when prefix sharing should help most (many requests with
a running system prompt). Symptom: a request whose hits are held and whose one new block is free
gets None.
"""

CAUGHT_BY = ["test_held_hits_cost_no_free_block"]

EDIT = (
    "        num_evictable_hits = sum(block.ref_cnt == 0 for block in new_computed_blocks)\n",
    "        num_evictable_hits = len(new_computed_blocks)  # held hits counted too\n",
)
