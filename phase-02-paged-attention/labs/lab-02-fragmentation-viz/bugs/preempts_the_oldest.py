"""When the pool is empty, the oldest running request is preempted instead of the newest.

The oldest request has the most work done and the most blocks to give back, and preempting it
throws that work away; vLLM preempts the request it admitted last. Symptom: a different
preemption count and later finish steps.
"""

CAUGHT_BY = ["test_serve_paged_preempts_the_newest_request", "test_serve_paged_matches_brute_force"]

EDIT = (
    '        victim = next(reversed(tables))\n',
    '        victim = next(iter(tables))\n',
)
