"""Kernel: the causal mask lets a row see one position past its own (``t <= pos + 1``).

Every row of a chunk but the last takes in the next token of the chunk; the last row takes in
a key the load never fetched (masked to zero: a score of 0 and a value of 0 join the softmax).
Every output is a little wrong, well beyond float16 rounding.
"""

CAUGHT_BY = [
    "test_kernel_one_prompt_from_scratch",
    "test_kernel_chunk_after_a_cached_prefix",
    "test_kernel_ragged_batch",
    "test_kernel_one_token_chunks_are_decode_steps",
]

EDIT = (
    '            s = tl.where(t[None, :] <= pos[:, None], s, float("-inf"))\n',
    '            s = tl.where(t[None, :] <= pos[:, None] + 1, s, float("-inf"))  # BUG: one future token\n',
)
