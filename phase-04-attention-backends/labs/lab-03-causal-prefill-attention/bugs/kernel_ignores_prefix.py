"""Kernel: the chunk's prefix length is taken as 0, so positions count from the chunk's start.

Right for prompts from scratch and nothing else: after a cached prefix, row j attends to the
sequence's tokens 0 .. j (the start of the prefix) instead of the prefix and the chunk up to
itself; a decode token sees only the first token of its sequence.
"""

CAUGHT_BY = [
    "test_kernel_chunk_after_a_cached_prefix",
    "test_kernel_ragged_batch",
    "test_kernel_one_token_chunks_are_decode_steps",
]

EDIT = (
    "    context_len = seq_len - query_len  # the chunk's first position: `start` of the numpy part\n",
    "    context_len = 0  # BUG: the cached prefix forgotten, positions counted from the chunk\n",
)
