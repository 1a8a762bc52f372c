"""free() gives the blocks back head first: the prefix is queued for eviction before the tail.

The free queue evicts from the front. Freed head first, a finished request's first blocks, the
ones other requests are most likely to share (system prompt, conversation history), are evicted
first, and the tail (its private last tokens) survives. Symptom: after A finishes, the free queue
ends with 1, 2, 3 instead of 3, 2, 1, and memory pressure evicts A's prefix.
"""

CAUGHT_BY = [
    "test_shared_system_prompt_is_held_until_the_last_user_leaves",
    "test_freed_blocks_linger_and_a_newcomer_revives_them_from_the_middle",
    "test_eviction_takes_a_sequence_tail_before_its_prefix",
    "test_exact_pool_never_over_allocates",
    "test_bad_input_is_a_clear_error_and_changes_nothing",
    "test_random_workload_matches_a_brute_force_model",
]

EDIT = (
    "        self.block_pool.free_blocks(reversed(blocks))\n",
    "        self.block_pool.free_blocks(blocks)  # head first\n",
)
