"""A request that preempted itself is still added to the batch.

The preemption loop stops when the victim is the request being served, but the step goes on as if
the allocation had succeeded: the request, now back in the queue with no blocks, is scheduled with
no new blocks. Symptom: in the step where the last running request finds no block, it is both
preempted and scheduled.
"""

CAUGHT_BY = ["test_a_request_that_preempts_itself_ends_the_running_part"]

EDIT = (
    "            if new_blocks is None:\n                break\n            self._add_to_batch(",
    "            self._add_to_batch(",
)
