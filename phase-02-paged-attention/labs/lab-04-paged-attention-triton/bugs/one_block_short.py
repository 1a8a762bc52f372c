"""One block short: the loop runs seq_len // block_size times (floor) instead of the ceiling.

Symptom: the tokens of a partly filled last block are never read: wrong for every seq_len
that is not a multiple of block_size, and seq_len < block_size attends over nothing.
"""

CAUGHT_BY = ["test_triton_matches_dense", "test_source_example_130_tokens_in_9_scattered_blocks"]

EDIT = (
    '    for logical in range(0, tl.cdiv(seq_len, BLOCK_SIZE)):\n',
    '    for logical in range(0, seq_len // BLOCK_SIZE):  # BUG: floor, not ceil\n',
)
