"""The budget functions check the ranges of query_itemsize, limit_bytes and max_seq_len, not their type.

``2.0 in (2, 4)`` is true, so a query_itemsize of 2.0 gives float byte counts; a limit of 49,152.5
bytes gives a largest partition of 12208.0, a max_seq_len of 100.5 a reduce budget of 88.0. Symptom:
floats where the annotations say int, instead of a ValueError naming the argument.
"""

CAUGHT_BY = ["test_budget_rejects_bad_input"]

EDITS = [
    ("    query_itemsize = _check_integer(\"query_itemsize\", query_itemsize)  # 2.0 is in (2, 4): float byte counts\n",
     ""),
    ("    limit_bytes = _check_integer(\"limit_bytes\", limit_bytes)\n", ""),
    ("    max_seq_len = _check_integer(\"max_seq_len\", max_seq_len)\n", ""),
]
