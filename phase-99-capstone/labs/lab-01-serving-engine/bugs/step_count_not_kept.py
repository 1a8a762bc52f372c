"""The given step forgets to count itself: ``num_steps`` stays 0.

Tokens are right, but ``num_steps`` (what a benchmark divides by, and what ``generate``'s
``max_steps`` guard reads) never moves, so a run that never ends is never stopped. Symptom:
num_steps is 0 after a run of 5 steps.
"""

CAUGHT_BY = ["test_generate_serves_each_prompt_to_its_end"]

SOURCE = "_engine_base.py"  # the given engine half

EDIT = (
    "        self.num_steps += 1\n",
    "",
)
