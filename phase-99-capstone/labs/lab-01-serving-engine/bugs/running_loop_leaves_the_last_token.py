"""The running requests are served only while more than one token of budget is left.

Off by one in the loop's budget test (``budget > 1``): a running request whose turn comes with exactly
one token left is skipped, although one token is all a decode needs. Tokens stay right (it runs a
step later), so only the schedule shows it. Symptom: in step 2 of a run with a budget of 2, the
running t1 is not scheduled after t0's decode token.
"""

CAUGHT_BY = ["test_the_budget_is_spent_to_its_last_token"]

EDIT = (
    "        while index < len(self.running) and budget > 0:\n",
    "        while index < len(self.running) and budget > 1:\n",
)
