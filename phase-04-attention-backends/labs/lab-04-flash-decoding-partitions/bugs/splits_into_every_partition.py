"""partitioned_attention asks np.array_split for num_partitions chunks, however many that is.

Right for every count a GPU would launch, but num_partitions is any integer >= 1: for 10**12,
np.array_split first lists 10**12 chunk sizes, and memory runs out before a key is read. Only as
many chunks as keys can be non-empty. Symptom: a MemoryError for 3 keys in 10**12 partitions.
"""

CAUGHT_BY = ["test_more_partitions_than_keys"]

EDIT = (
    "    num_chunks = min(num_partitions, max(k.shape[0], 1))\n",
    "    num_chunks = num_partitions\n",
)
