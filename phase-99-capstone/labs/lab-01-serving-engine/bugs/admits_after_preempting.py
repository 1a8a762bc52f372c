"""Waiting requests are admitted in a step that had to preempt.

Memory ran short a moment ago, yet the scheduler goes on to the waiting queue: the blocks a victim just
gave back go to whoever waits at the head, often the victim itself, readmitted in the very step that
preempted it, or a newcomer that will be preempted in turn. The tokens stay right (a recomputed request
computes the same keys); only the schedule shows it.
"""

CAUGHT_BY = ["test_schedule_matches_brute_force_under_preemption"]

EDIT = (
    " and not output.preempted_req_ids:\n",
    ":  # even in a step that preempted\n",
)
