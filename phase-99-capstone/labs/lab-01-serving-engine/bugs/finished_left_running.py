"""A finished request stays in the running list.

Its blocks are freed and it is in `finished`, but the scheduler still serves it: it gets new blocks and
keeps generating past max_new_tokens, in two queues at once.
"""

CAUGHT_BY = ["test_tokens_match_generate", "test_scheduling_invariants_hold_every_step",
             "test_requests_join_and_leave_between_steps"]

EDIT = (
    "        if finished:\n"
    "            self.running = [r for r in self.running if r.status is not RequestStatus.FINISHED]\n",
    "",
)
