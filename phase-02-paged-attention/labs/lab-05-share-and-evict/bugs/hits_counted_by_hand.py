"""allocate_slots() increments the hits' ref counts itself instead of calling block_pool.touch().

The counts are right, but a hit that waited in the free queue stays there: a block with ref_cnt 1
in the free queue breaks invariant 1, and the next get_new_blocks hands it to another request,
evicting its key while the newcomer reads it. Symptom: after C revives blocks 1 and 2, they are
still in the free queue, and the next request gets them.
"""

CAUGHT_BY = [
    "test_freed_blocks_linger_and_a_newcomer_revives_them_from_the_middle",
    "test_exact_pool_never_over_allocates",
    "test_random_workload_matches_a_brute_force_model",
]

EDIT = (
    "        self.block_pool.touch(new_computed_blocks)\n",
    "        for block in new_computed_blocks:  # counted by hand: a free hit stays in the free queue\n"
    "            block.ref_cnt += 1\n",
)
