"""allocate_slots() puts the prefix-cache hits in the table without touching them.

Their ref counts are not incremented: a hit shared with a running request stays at 1, and when
that request finishes the block returns to the free queue while the newcomer still reads it; a hit
revived from the free queue stays in it (ref_cnt 0) and is handed to the next request. Symptom:
two requests share blocks 1 and 2, whose ref_cnt is 1.
"""

CAUGHT_BY = [
    "test_identical_prompts_share_physical_blocks",
    "test_shared_system_prompt_is_held_until_the_last_user_leaves",
    "test_freed_blocks_linger_and_a_newcomer_revives_them_from_the_middle",
    "test_random_workload_matches_a_brute_force_model",
]

EDIT = (
    "        self.block_pool.touch(new_computed_blocks)\n",
    "",
)
