"""One split taken through the split path: ``num_splits >= 1`` where it must be ``> 1``.

Symptom: the right answer, at the wrong cost: every step writes float32 summaries and launches the
reduce to merge a single split, two kernels where the README promises one.
"""

CAUGHT_BY = ["test_one_split_launches_one_kernel_and_more_launch_two"]

EDIT = (
    "    if num_splits > 1:\n",
    "    if num_splits >= 1:  # BUG: one split merged too\n",
)
