"""The head_dim check refuses 4096, the largest size it means to accept (``>=`` for ``>``).

Symptom: a ValueError naming head_dim for a query of 4096 elements.
"""

CAUGHT_BY = ["test_qk_triton_head_dims_at_the_limits"]

SOURCE = "_walkthrough_checks.py"  # the given input checks

EDIT = (
    "    if q.shape[1] == 0 or q.shape[1] > 4096:\n",
    "    if q.shape[1] == 0 or q.shape[1] >= 4096:\n",
)
