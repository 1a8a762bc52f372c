"""The check on num_partitions forgets that bool is a subclass of int: True passes as one partition.

isinstance(True, int) holds, so a flag passed where the count belongs (partitioned_attention(q, k, v,
split) with split = True) runs as one partition instead of stopping with a message. Symptom: no
ValueError for num_partitions=True.
"""

CAUGHT_BY = ["test_bad_input_gets_a_clear_message"]

SOURCE = "_merge_checks.py"

EDIT = (
    "isinstance(num_partitions, bool) or not isinstance(num_partitions, int | np.integer)",
    "not isinstance(num_partitions, int | np.integer)",
)
