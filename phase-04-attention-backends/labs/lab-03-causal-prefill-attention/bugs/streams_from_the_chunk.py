"""The stream starts at the chunk's first block: the cached prefix is never read.

A kernel written for prompts from scratch, reused for chunks: the loop over blocks begins where
the chunk begins, so each row attends only to the chunk's own tokens (and the part of the
prefix that shares the chunk's first block). Right for start = 0, wrong for every later chunk.
"""

CAUGHT_BY = [
    "test_chunk_after_a_scattered_prefix",
    "test_chunked_equals_one_shot",
    "test_a_one_token_chunk_is_a_decode_step",
]

EDIT = (
    "    for block_start in range(0, seq_len, block_size):\n",
    "    for block_start in range(start - start % block_size, seq_len, block_size):  # BUG: the prefix skipped\n",
)
