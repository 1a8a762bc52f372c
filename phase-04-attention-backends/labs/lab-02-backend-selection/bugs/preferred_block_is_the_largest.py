"""The preferred block size of a backend that cannot take 16 is its largest kernel block size.

get_preferred_block_size takes the smallest (``min``). Symptom: FlashInfer MLA runs with 64-token
blocks where v0.22.1 gives it 32.
"""

CAUGHT_BY = ["test_mla_choices", "test_override_is_obeyed"]

EDIT = (
    '    return DEFAULT_BLOCK_SIZE if any(DEFAULT_BLOCK_SIZE % s == 0 for s in sizes) else min(sizes)\n',
    '    return DEFAULT_BLOCK_SIZE if any(DEFAULT_BLOCK_SIZE % s == 0 for s in sizes) else max(sizes)  # BUG\n',
)
