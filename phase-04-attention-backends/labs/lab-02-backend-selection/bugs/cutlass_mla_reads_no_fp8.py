"""CUTLASS MLA given no fp8 KV-cache format.

CutlassMLABackend's supported_kv_cache_dtypes include fp8 (e4m3). Symptom: an MLA layer with an
fp8 cache on a B200 gets "no fp8 e4m3 KV cache here" from CUTLASS MLA.
"""

CAUGHT_BY = ["test_backend_problems_empty_when_it_can_run"]

EDIT = (
    '    "CUTLASS_MLA": _Limits(mla=True, dtypes=_HALF, kernel_block_sizes=(128,), head_sizes=(320, 576),\n'
    '                           fp8_formats=("e4m3",)),\n',
    '    "CUTLASS_MLA": _Limits(mla=True, dtypes=_HALF, kernel_block_sizes=(128,), head_sizes=(320, 576)),  # BUG\n',
)
