"""generate's guard stops a run after max_steps + 1 steps (``>`` where ``>=`` belongs).

Symptom: ``generate(..., max_steps=4)`` of a run that needs 5 steps finishes instead of raising.
"""

CAUGHT_BY = ["test_generate_serves_each_prompt_to_its_end"]

SOURCE = "_engine_base.py"  # the given engine half

EDIT = (
    "            if self.num_steps >= max_steps:\n",
    "            if self.num_steps > max_steps:\n",
)
