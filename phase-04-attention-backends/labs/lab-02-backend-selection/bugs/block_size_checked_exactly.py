"""A block size taken only if it is one of the kernel block sizes, not a multiple of one.

supports_block_size accepts any multiple: the engine's blocks can hold several kernel blocks.
Symptom: FlashMLA refuses 128-token blocks, FlashInfer MLA refuses 96 and 128, FlashAttention
refuses 48.
"""

CAUGHT_BY = ["test_backend_problems_empty_when_it_can_run", "test_block_sizes", "test_mla_choices"]

EDIT = (
    '    if block_size is not None and all(block_size % size for size in limits.kernel_block_sizes):\n',
    '    if block_size is not None and block_size not in limits.kernel_block_sizes:  # BUG: exact sizes only\n',
)
