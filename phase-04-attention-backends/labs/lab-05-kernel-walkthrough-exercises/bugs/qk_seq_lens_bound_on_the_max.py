"""The seq_lens check compares the largest length with 0, not the smallest.

A negative length after a valid one passes, and the kernel reads it as "no token". Symptom: no
ValueError for seq_lens [4, -1].
"""

CAUGHT_BY = ["test_qk_rejects_bad_input"]

SOURCE = "_walkthrough_checks.py"  # the given input checks

EDIT = (
    "    if lens.numel() and (int(lens.min()) < 0 or int(lens.max()) > max_len):\n",
    "    if lens.numel() and (int(lens.max()) < 0 or int(lens.max()) > max_len):\n",
)
