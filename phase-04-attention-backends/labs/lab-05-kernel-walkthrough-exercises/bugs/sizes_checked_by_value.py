"""The given integer check compares values (``int(value) != value``), so 16.0 and True pass as 16 and 1.

A float equal to a whole number passes, and then every count derived from it is a float
(``blocks_per_seq(..., 16.0)`` gives ``[2.0]``, a budget of 128.0-wide heads has float bytes) and every
index into numpy is a TypeError about slices. Symptom: floats, or an error from numpy's indexing,
instead of a ValueError naming block_size or head_size.
"""

CAUGHT_BY = ["test_slot_mapping_rejects_bad_input", "test_budget_rejects_bad_input"]

SOURCE = "_walkthrough_checks.py"  # the given input checks

EDIT = (
    "    if isinstance(value, bool) or not isinstance(value, numbers.Integral):\n",
    "    if int(value) != value:\n",
)
