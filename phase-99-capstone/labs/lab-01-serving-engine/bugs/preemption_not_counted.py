"""_preempt frees the request and sends it back to the queue, but does not count the preemption.

Tokens, queues and blocks are all right: only request.num_preemptions stays 0, the number a
scheduler's metrics and a benchmark's preemption count read. Symptom: the schedule test's last
check, num_preemptions per request against the planned run's preemptions.
"""

CAUGHT_BY = ["test_schedule_matches_brute_force_under_preemption"]

EDIT = (
    "        request.num_preemptions += 1\n",
    "        pass  # the preemption is not counted\n",
)
