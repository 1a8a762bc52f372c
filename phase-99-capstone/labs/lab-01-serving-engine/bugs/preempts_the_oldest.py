"""The victim of a preemption is the oldest running request, not the newest.

It undoes the work of the request that has been running longest (often one already scheduled in this
very step, whose chunk is then in the batch with its blocks freed), and shifts the list under the
scheduler's index so that a request is skipped.
"""

CAUGHT_BY = ["test_small_pool_makes_requests_wait_not_fail", "test_scheduling_invariants_hold_every_step"]

EDIT = (
    "                victim = self.running.pop()\n",
    "                victim = self.running.pop(0)  # the oldest\n",
)
