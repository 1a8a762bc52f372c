"""allocate_slots adds the hit tokens to the computed tokens a second time when it counts blocks.

num_computed_tokens already includes num_new_computed_tokens; adding them again asks for blocks
for tokens that do not exist. Symptom: a request with 8 hit tokens and 2 new ones takes 3 new
blocks instead of 1.
"""

CAUGHT_BY = [
    "test_identical_prompts_share_physical_blocks",
    "test_exact_pool_never_over_allocates",
    "test_random_workload_matches_a_brute_force_model",
]

EDIT = (
    "        num_required_blocks = cdiv(num_computed_tokens + num_new_tokens, self.block_size)\n",
    "        num_required_blocks = cdiv(num_computed_tokens + num_new_computed_tokens + num_new_tokens,\n"
    "                                   self.block_size)  # the hits counted twice\n",
)
