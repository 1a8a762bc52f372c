"""A preempted request's blocks go back to the pool head first instead of tail first.

The same mistake as for a finished request, on the preemption path: the victim's prompt blocks,
which it will need again when it is readmitted (and could hit with prefix caching), are the first
to be handed to someone else. Symptom: the same counts, other block ids after a preemption.
"""

CAUGHT_BY = ["test_serve_paged_matches_brute_force"]

EDIT = (
    "        pool.free_blocks(reversed(tables.pop(victim)))  # tail first, as vLLM frees\n",
    "        pool.free_blocks(tables.pop(victim))  # head first\n",
)
