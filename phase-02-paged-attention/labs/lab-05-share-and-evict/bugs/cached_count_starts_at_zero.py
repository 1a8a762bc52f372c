"""allocate_slots() starts a new request's num_cached_block at 0, forgetting its prefix-cache hits.

The hits are cached already (that is how they were found), but with a count of 0 _cache_full_blocks
asks the pool to cache them again, from block 0, and lab 02-01's pool refuses a block that already
has a key. Symptom: admitting a request that hits raises "already cached" inside the pool.
"""

CAUGHT_BY = [
    "test_identical_prompts_share_physical_blocks",
    "test_shared_system_prompt_is_held_until_the_last_user_leaves",
    "test_a_fully_cached_prompt_recomputes_its_last_block",
    "test_freed_blocks_linger_and_a_newcomer_revives_them_from_the_middle",
    "test_held_hits_cost_no_free_block",
    "test_a_preempted_request_comes_back_through_the_cache",
    "test_exact_pool_never_over_allocates",
    "test_random_workload_matches_a_brute_force_model",
]

EDIT = (
    "        self.num_cached_block.setdefault(request.request_id, len(new_computed_blocks))\n",
    "        self.num_cached_block.setdefault(request.request_id, 0)  # the hits forgotten\n",
)
