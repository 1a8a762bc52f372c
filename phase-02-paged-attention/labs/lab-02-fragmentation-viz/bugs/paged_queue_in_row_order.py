"""serve_paged queues the requests in row order, as if the stream were sorted by arrival.

A stream's rows need not be in arrival order. Taken by row, a request that arrives late but sits
in an early row blocks the head of the queue. Symptom: with the rows shuffled, admissions come late
and out of first-come order.
"""

CAUGHT_BY = ["test_serve_paged_matches_brute_force"]

EDIT = (
    "    waiting = deque(sorted(range(len(stream)), key=lambda r: (arrival[r], r)))\n\n    def preempt_newest",
    "    waiting = deque(range(len(stream)))  # row order: assumes the rows are sorted by arrival\n\n"
    "    def preempt_newest",
)
