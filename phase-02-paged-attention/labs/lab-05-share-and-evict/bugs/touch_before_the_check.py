"""allocate_slots() touches the hits before it checks that the request fits.

When the check then fails and returns None, the hits keep the extra reference (and have left the
free queue) although the request holds nothing: those blocks leak until the request is freed,
which the scheduler never does for a request it did not admit. Symptom: after a None, the hits
have ref_cnt 1 and are no longer free.
"""

CAUGHT_BY = ["test_exact_pool_never_over_allocates", "test_random_workload_matches_a_brute_force_model"]

EDITS = [
    ("        num_evictable_hits = sum(block.ref_cnt == 0 for block in new_computed_blocks)\n",
     "        num_evictable_hits = sum(block.ref_cnt == 0 for block in new_computed_blocks)\n"
     "        self.block_pool.touch(new_computed_blocks)  # before knowing whether the request fits\n"),
    ("        self.block_pool.touch(new_computed_blocks)\n        req_blocks = ",
     "        req_blocks = "),
]
