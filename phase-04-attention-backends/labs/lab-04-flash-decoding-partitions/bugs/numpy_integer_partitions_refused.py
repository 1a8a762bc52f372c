"""The check on num_partitions takes isinstance(num_partitions, int) for "an integer": numpy integers are refused.

np.int64(3) is no Python int, and it is what numpy arithmetic hands back (a partition count computed as
np.ceil(n / 512).astype(int), read from an array of per-sequence counts). Symptom: partitioned_attention
raises "num_partitions must be an int >= 1, got np.int64(3)".
"""

CAUGHT_BY = ["test_a_partition_count_of_a_numpy_integer_type"]

SOURCE = "labkit/integers.py"  # the integer check the labs share, which the given _merge_checks.py calls

EDIT = (
    "    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or (low is not None and value < low):\n",
    "    if isinstance(value, bool) or not isinstance(value, int) or (low is not None and value < low):  # BUG\n",
)
