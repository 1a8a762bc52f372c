"""A preempted request keeps its num_computed_tokens.

Its blocks were freed, but it believes its first tokens are still cached: when it is admitted again it
computes only the rest, into fresh blocks, and attends to whatever those blocks held before. Wrong
tokens, and only when the pool is small enough to preempt.
"""

CAUGHT_BY = ["test_small_pool_makes_requests_wait_not_fail", "test_scheduling_invariants_hold_every_step"]

EDIT = (
    "        request.num_computed_tokens = 0\n        request.status = RequestStatus.PREEMPTED\n",
    "        request.status = RequestStatus.PREEMPTED\n",
)
