"""Triton credited with e4m3 caches only.

v0.22.1's TritonAttentionBackend lists fp8_e5m2 among its KV-cache dtypes. Symptom: an e5m2 cache
with head size 96 on an H100 finds no backend.

History: v0.10.1's Triton backend read every fp8 cache as e4m3.
"""

CAUGHT_BY = ["test_fp8_cache_per_backend", "test_fp8_cache_choices"]

EDIT = (
    '    "TRITON_ATTN": _Limits(mla=False, dtypes=DTYPES, kernel_block_sizes=(16,), fp8_formats=("e4m3", "e5m2")),\n',
    '    "TRITON_ATTN": _Limits(mla=False, dtypes=DTYPES, kernel_block_sizes=(16,), fp8_formats=("e4m3",)),  # BUG\n',
)
