"""The check on num_partitions forgets that bool is a subclass of int: True passes as one partition.

isinstance(True, int) holds, so a flag passed where the count belongs (partitioned_attention(q, k, v,
split) with split = True) runs as one partition instead of stopping with a message. Symptom: no
ValueError for num_partitions=True.
"""

CAUGHT_BY = ["test_bad_input_gets_a_clear_message"]

SOURCE = "labkit/integers.py"  # the integer check the labs share, which the given _merge_checks.py calls

EDIT = (
    "    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or (low is not None and value < low):\n",
    "    if not isinstance(value, numbers.Integral) or (low is not None and value < low):  # BUG: True is an int\n",
)
