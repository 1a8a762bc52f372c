"""merge_splits accepts partition_size 0 (the check only asks for an int).

Symptom: a division by zero inside the kernel (on a GPU, an undefined result) instead of a
clear ValueError naming merge_splits.
"""

CAUGHT_BY = ["test_merge_splits_bad_input_gets_a_clear_error"]

EDIT = (
    "    if not _is_count(partition_size):\n",
    "    if not isinstance(partition_size, int):\n",
)
