"""A running request that finds no block, and is itself the newest, preempts itself and tries again.

The preemption loop pops the newest running request until the allocation succeeds, with no stop for
the case where the victim is the very request being served. That request has just been freed, reset and
put back in the queue; the retried allocation now succeeds for its reset progress, and it is scheduled
while it waits (or, when even that fails, the next pop finds the running list empty). Symptom: in the
step where the last running request finds no block, the engine preempts it and schedules it anyway.
"""

CAUGHT_BY = ["test_a_request_that_preempts_itself_ends_the_running_part"]

EDIT = (
    "                if victim is request:\n"
    "                    break  # it was the last one: nobody left to make room for\n",
    "",
)
