"""Admission stops while one token of budget is left.

The waiting loop asks for budget > 1: a newcomer whose turn comes with one token left waits a step it
need not (the tokens stay right), and under a budget of one token nobody is ever admitted.
"""

CAUGHT_BY = ["test_sizes_at_the_api_limits", "test_the_budget_is_spent_to_its_last_token"]

EDIT = (
    "        while self.waiting and budget > 0 and len(self.running) < self.max_num_seqs and not "
    "output.preempted_req_ids:\n",
    "        while self.waiting and budget > 1 and len(self.running) < self.max_num_seqs and not "
    "output.preempted_req_ids:\n",
)
