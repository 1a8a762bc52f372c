"""Partitions of n // num_partitions keys each: the last n % num_partitions keys are lost.

A hand-rolled split instead of np.array_split: the remainder is never attended.

Symptom: right when the partition count divides n, wrong otherwise (257 keys in 2, 3, 7, 32 or
100 partitions always leave some out); with more partitions than keys every chunk is empty and
the output is zeros.
"""

CAUGHT_BY = [
    "test_any_partition_count_matches_dense",
    "test_partitioned_attention_summarizes_each_chunk",
]

EDIT = (
    "    chunks = zip(np.array_split(k, num_chunks), np.array_split(v, num_chunks), strict=True)\n",
    "    size = k.shape[0] // num_chunks  # the remainder, n % num_chunks keys, is lost\n"
    "    chunks = [(k[i * size : (i + 1) * size], v[i * size : (i + 1) * size]) for i in range(num_chunks)]\n",
)
