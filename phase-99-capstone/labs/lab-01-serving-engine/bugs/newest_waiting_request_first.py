"""Waiting requests are admitted last come, first served.

The scheduler takes the request at the back of the queue: the newest arrival overtakes the others, and
a preempted request (put back at the head so that it resumes first) waits behind everyone. The tokens
stay right; the order does not.
"""

CAUGHT_BY = ["test_small_pool_makes_requests_wait_not_fail"]

EDITS = [
    ("            request = self.waiting[0]\n", "            request = self.waiting[-1]  # the newest\n"),
    ("            self.waiting.popleft()\n", "            self.waiting.pop()\n"),
]
