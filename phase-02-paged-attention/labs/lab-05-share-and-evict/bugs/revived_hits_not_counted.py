"""allocate_slots() checks only the new blocks against the free count, forgetting the hits that wait in the free queue.

A hit with ref_cnt 0 is one of the free blocks: reviving it takes it out of the free queue just
as allocating would. On a pool with little room the check passes, the hits are touched, and then
the pool cannot give the new blocks: lab 02-01's pool raises halfway through, with the hits
already taken (vLLM's get_num_blocks_to_allocate counts them as evictable blocks for this reason). Symptom: a
request that does not fit raises instead of getting None, and leaves its hits touched.
"""

CAUGHT_BY = ["test_exact_pool_never_over_allocates", "test_random_workload_matches_a_brute_force_model"]

EDIT = (
    "        num_evictable_hits = sum(block.ref_cnt == 0 for block in new_computed_blocks)\n",
    "        num_evictable_hits = 0  # hits are not counted against the free blocks\n",
)
