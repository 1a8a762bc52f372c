"""The running requests' tokens are not taken off the token budget.

Each running request is still cut to the budget, but the budget stays whole: every running request may
take all of it, and the newcomers get it again. A step computes several times max_num_batched_tokens,
which is what the budget exists to prevent (a long prefill stalling everyone's decode).
"""

CAUGHT_BY = ["test_chunk_size_changes_nothing", "test_scheduling_invariants_hold_every_step",
             "test_schedule_matches_brute_force_under_preemption"]

EDIT = (
    "            budget -= num_new_tokens\n            index += 1\n",
    "            index += 1  # the budget is spent by newcomers only\n",
)
