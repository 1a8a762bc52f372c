"""A preempted request is readmitted with blocks for its prompt only.

It recomputes its prompt and every token it had sampled, so it needs blocks for all of them.
Symptom: right until the first preemption, then a step with used > reserved.
"""

CAUGHT_BY = ["test_serve_paged_preempts_the_newest_request", "test_serve_paged_matches_brute_force"]

EDIT = (
    '            need = blocks_needed(prompt[r] + sampled[r], block_size)\n',
    '            need = blocks_needed(prompt[r], block_size)\n',
)
