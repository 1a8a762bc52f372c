"""A hand-rolled split into chunks of ceil(n / num_partitions) keys: the last chunks come out short or empty.

Every key is in some chunk, so the output is right. But the chunks are not those of np.array_split,
which the docstring promises (and a GPU grid assumes: n // P or n // P + 1 keys per thread block):
10 keys in 3 partitions give 4, 4 and 2 instead of 4, 3 and 3, and 5 keys in 4 give 2, 2, 1 and an
empty one. Symptom: only the chunk-size test fails.
"""

CAUGHT_BY = ["test_partitioned_attention_summarizes_each_chunk"]

EDIT = (
    "    chunks = zip(np.array_split(k, num_chunks), np.array_split(v, num_chunks), strict=True)\n",
    "    size = -(-k.shape[0] // num_chunks)  # ceil(n / P) keys a chunk\n"
    "    chunks = [(k[i * size:(i + 1) * size], v[i * size:(i + 1) * size]) for i in range(num_chunks)]\n",
)
