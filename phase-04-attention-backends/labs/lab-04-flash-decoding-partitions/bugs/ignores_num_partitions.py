"""Ignoring num_partitions: partitioned_attention summarizes all the keys at once and never splits.

The output is right (it is dense attention), which is why output tests alone cannot see it; but
the point of the function, many independent summaries that a GPU computes in parallel, is gone.
Symptom: attend_partial is called once, on all n keys.
"""

CAUGHT_BY = [
    "test_partitioned_attention_summarizes_each_chunk",
]

EDIT = (
    "    chunks = zip(np.array_split(k, num_chunks), np.array_split(v, num_chunks), strict=True)\n",
    "    chunks = [(k, v)]  # one partition, whatever was asked\n",
)
