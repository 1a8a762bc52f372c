"""FlashAttention's block-size rule left out: its get_kv_cache_shape wants a multiple of 16.

Symptom: block size 8 gets FLASH_ATTN, whose KV cache cannot be allocated ("Block size must be a
multiple of 16").
"""

CAUGHT_BY = [
    "test_backend_problems_name_the_limit",
    "test_block_sizes",
    "test_sliding_window_with_no_backend",
]

EDIT = (
    '    "FLASH_ATTN": _Limits(mla=False, dtypes=_HALF, head_sizes=_FA_HEAD_SIZES, block_multiple=16),\n',
    '    "FLASH_ATTN": _Limits(mla=False, dtypes=_HALF, head_sizes=_FA_HEAD_SIZES),  # BUG: no block rule\n',
)
