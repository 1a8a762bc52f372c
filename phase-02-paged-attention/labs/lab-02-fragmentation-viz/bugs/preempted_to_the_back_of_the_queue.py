"""A preempted request goes to the back of the waiting queue instead of the front.

It arrived before everything that waits, and it has already produced tokens; sent to the back it
waits behind requests that arrived after it, and first come, first served is broken for exactly
the requests the server already let down. vLLM puts it back at the front (prepend_request).
Symptom: a preempted request readmitted after later arrivals.
"""

CAUGHT_BY = ["test_serve_paged_matches_brute_force"]

EDIT = (
    "        waiting.appendleft(victim)\n",
    "        waiting.append(victim)  # behind everyone\n",
)
