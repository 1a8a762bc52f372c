"""partitioned_attention splits with np.split instead of np.array_split.

np.split insists on equal chunks: it raises "array split does not result in an equal division"
whenever num_partitions does not divide the number of keys, which is nearly always (257 keys, a
partition count fixed by the GPU's size). Symptom: a numpy ValueError for 257 keys in 2 partitions,
and for more partitions than keys.
"""

CAUGHT_BY = ["test_any_partition_count_matches_dense", "test_more_partitions_than_keys"]

EDIT = (
    "    chunks = zip(np.array_split(k, num_partitions), np.array_split(v, num_partitions), strict=True)\n",
    "    chunks = zip(np.split(k, num_partitions), np.split(v, num_partitions), strict=True)\n",
)
