"""add_request checks the largest token id against 0 instead of the smallest.

A negative id after valid ones passes, and the embedding reads it from the end of the table.
Symptom: no ValueError for the prompt [5, -1].
"""

CAUGHT_BY = ["test_add_request_accepts_and_refuses_at_its_edges"]

SOURCE = "_engine_base.py"  # the given engine half

EDIT = (
    "        if min(prompt) < 0 or max(prompt) >= vocab:\n",
    "        if max(prompt) < 0 or max(prompt) >= vocab:\n",
)
