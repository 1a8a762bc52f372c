"""Admission compares the running count with max_num_seqs using <= instead of <.

The limit is the most requests running at once; admitting while len(running) == max_num_seqs makes it
max_num_seqs + 1. Invisible while the pool or the budget is the tighter limit.
"""

CAUGHT_BY = ["test_schedule_matches_brute_force_under_preemption", "test_scheduling_invariants_hold_every_step"]

EDIT = (
    "len(self.running) < self.max_num_seqs and not output.preempted_req_ids:\n",
    "len(self.running) <= self.max_num_seqs and not output.preempted_req_ids:\n",
)
