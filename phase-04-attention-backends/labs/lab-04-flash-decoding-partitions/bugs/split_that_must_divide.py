"""partitioned_attention splits with np.split instead of np.array_split.

np.split insists on equal chunks: it raises "array split does not result in an equal division"
whenever the number of chunks does not divide the number of keys, which is nearly always (257 keys, a
partition count fixed by the GPU's size). Symptom: a numpy ValueError for 257 keys in 2 partitions.
"""

CAUGHT_BY = ["test_any_partition_count_matches_dense", "test_partitioned_attention_summarizes_each_chunk"]

EDIT = (
    "    chunks = zip(np.array_split(k, num_chunks), np.array_split(v, num_chunks), strict=True)\n",
    "    chunks = zip(np.split(k, num_chunks), np.split(v, num_chunks), strict=True)\n",
)
