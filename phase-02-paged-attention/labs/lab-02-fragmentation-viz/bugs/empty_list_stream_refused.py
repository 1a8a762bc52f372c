"""_check_stream has no early return for an empty stream, so ``[]`` meets the shape check.

numpy reads ``[]`` as a float array of shape [0]: not 2-D, not integers. Symptom: a ValueError for
``serve_contiguous([], ...)``, where an empty timeline is the answer.
"""

CAUGHT_BY = ["test_takes_lists"]

SOURCE = "_stream.py"  # the given checks

EDIT = (
    "    if stream.size == 0:\n        return np.zeros((0, 3), dtype=np.int64)\n",
    "",
)
