"""The torch reference gathers whole blocks: every slot of each visited block, the empty tail too.

Symptom: the "obviously correct" debugger is wrong exactly where the kernel is hardest
(seq_len not a multiple of block_size), so it would agree with a kernel that has the same
missing tail mask. The tests compare with float64 dense attention, never with this function,
and the poisoned tail slots make the error loud.
"""

CAUGHT_BY = ["test_torch_reference_matches_dense_fp32", "test_source_example_130_tokens_in_9_scattered_blocks"]

EDIT = (
    '        tokens = range(logical * block_size, min((logical + 1) * block_size, seq_len))  # tail block: fewer\n',
    '        tokens = range(logical * block_size, (logical + 1) * block_size)  # BUG: the whole block\n',
)
