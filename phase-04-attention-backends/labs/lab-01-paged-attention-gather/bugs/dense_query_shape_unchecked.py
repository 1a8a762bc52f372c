"""_check_dense lets a query that is not a vector through.

A [2, d] query then fails the next check with a message about k ("k must be [n, d] with d = 2"),
which points at the wrong argument. Symptom: a ValueError that blames k for q's shape.
"""

SOURCE = "_checks.py"  # the given input checks

CAUGHT_BY = ["test_bad_input_gets_a_clear_message"]

EDIT = (
    "    if q.ndim != 1:\n        raise ValueError(f\"q must be [d], got shape {q.shape}\")\n    if k.ndim != 2",
    "    if k.ndim != 2",
)
