"""A newly admitted request computes its whole prompt, whatever is left of the token budget.

The running requests respect the budget, but the first admission of a step takes all its tokens: a
long prompt makes one step as long as it likes (the stall chunked prefill exists to prevent), and a
step computes more than max_num_batched_tokens tokens.
"""

CAUGHT_BY = ["test_chunk_size_changes_nothing", "test_scheduling_invariants_hold_every_step"]

EDIT = (
    "            num_new_tokens = min(request.num_tokens - num_hit_tokens, budget)\n",
    "            num_new_tokens = request.num_tokens - num_hit_tokens  # the whole prompt, budget or not\n",
)
