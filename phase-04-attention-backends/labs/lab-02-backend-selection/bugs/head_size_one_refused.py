"""Head size 1 refused as a bad argument: ``head_size <= 1`` where any positive int is a head size.

Symptom: backend_problems('FLEX_ATTENTION', 'A100', 'float16', 1, 16) raises a ValueError instead
of answering (FlexAttention takes any head size).
"""

SOURCE = "_checks.py"

CAUGHT_BY = ["test_backend_problems_empty_when_it_can_run"]

EDIT = (
    "    if isinstance(head_size, bool) or not isinstance(head_size, int) or head_size <= 0:\n",
    "    if isinstance(head_size, bool) or not isinstance(head_size, int) or head_size <= 1:  # BUG\n",
)
