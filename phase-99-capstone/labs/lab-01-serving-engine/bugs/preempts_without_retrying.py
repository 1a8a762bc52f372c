"""After preempting one victim, the scheduler gives up on the request instead of trying its allocation again.

The victim's blocks are back in the pool, but nobody uses them this step: the request that needed them
stops the running loop, and so does everyone after it. Requests are preempted for nothing and steps run
smaller batches; with one victim too few, a step may schedule no one at all.
"""

CAUGHT_BY = ["test_schedule_matches_brute_force_under_preemption", "test_small_pool_makes_requests_wait_not_fail"]

EDIT = (
    "                if victim is request:\n"
    "                    break  # it was the last one: nobody left to make room for\n"
    "                new_blocks = self.allocate_slots(request, num_new_tokens)\n",
    "                break  # one victim, and no second try this step\n",
)
