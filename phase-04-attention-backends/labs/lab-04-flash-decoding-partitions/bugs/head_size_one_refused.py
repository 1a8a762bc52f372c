"""The check on q refuses a head size of 1 along with the empty q it is meant for.

``q [d]`` with d >= 1 is the contract; ``q.shape[0] <= 1`` says d >= 2. Symptom: attend_partial and
partitioned_attention with d = 1 raise a ValueError about q's shape.
"""

CAUGHT_BY = ["test_a_head_size_of_one"]

SOURCE = "_merge_checks.py"

EDIT = (
    "    if q.ndim != 1 or q.shape[0] == 0:\n",
    "    if q.ndim != 1 or q.shape[0] <= 1:\n",
)
