"""FlashAttention's block-size rule left out: its kernel block size is 16, and a block size must be a multiple of it.

Symptom: FLASH_ATTN accepts 8-token blocks, which its get_kv_cache_shape refuses ("Block size must
be a multiple of 16").
"""

CAUGHT_BY = ["test_backend_problems_name_the_limit", "test_block_size_with_no_backend"]

EDIT = (
    '    "FLASH_ATTN": _Limits(mla=False, dtypes=_HALF, kernel_block_sizes=(16,)),\n',
    '    "FLASH_ATTN": _Limits(mla=False, dtypes=_HALF, kernel_block_sizes=(1,)),  # BUG: any block size\n',
)
