"""The shared integer check compares values (``int(value) != value``), so 16.0 and True pass as 16 and 1.

A float equal to a whole number passes. Where a function goes on with the argument as it came, every
count derived from it is a float (``blocks_per_seq(..., 16.0)`` gives ``[2.0]``) and every index into
numpy is a TypeError about slices; where it goes on with the int the check hands back, ``head_size=128.0``
is quietly taken for 128. Symptom: floats, an error from numpy's indexing, or an answer, instead of a
ValueError naming block_size or head_size.
"""

CAUGHT_BY = ["test_slot_mapping_rejects_bad_input", "test_budget_rejects_bad_input"]

SOURCE = "labkit/integers.py"  # the integer check the labs share, which the given checks call

EDIT = (
    "    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or (low is not None and value < low):\n",
    "    if int(value) != value or (low is not None and value < low):\n",
)
