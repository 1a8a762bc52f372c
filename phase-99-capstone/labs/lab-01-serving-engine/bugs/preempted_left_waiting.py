"""_preempt marks the request WAITING instead of PREEMPTED.

The request is back in the queue with its blocks freed, so the schedule and the tokens stay right; but
its status says it never ran, and whoever reads the status (vLLM's scheduler tells a resumed request
from a new one by it) takes a recomputation for a first admission. Symptom: a waiting request that was
preempted reports the status WAITING.
"""

CAUGHT_BY = [
    "test_schedule_matches_brute_force_under_preemption",
    "test_a_request_that_preempts_itself_ends_the_running_part",
    "test_a_new_victim_goes_ahead_of_an_earlier_one_still_waiting",
    "test_scheduling_invariants_hold_every_step",
]

EDIT = (
    "        request.status = RequestStatus.PREEMPTED\n",
    "        request.status = RequestStatus.WAITING  # BUG: it ran, so it is PREEMPTED\n",
)
