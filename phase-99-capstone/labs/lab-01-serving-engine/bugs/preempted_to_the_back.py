"""A preempted request goes to the back of the waiting queue instead of the front.

It was running, so it arrived before everyone who still waits; at the back it waits behind newcomers,
loses its place in the first-come-first-served order, and may be overtaken again and again. The tokens
stay right; the order of the queue does not.
"""

CAUGHT_BY = ["test_schedule_matches_brute_force_under_preemption"]

EDIT = (
    "        self.waiting.appendleft(request)\n",
    "        self.waiting.append(request)  # to the back of the queue\n",
)
