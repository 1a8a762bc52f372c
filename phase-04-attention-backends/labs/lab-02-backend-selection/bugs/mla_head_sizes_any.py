"""FlashInfer MLA and CUTLASS MLA take any head size: the MLA head-size list left out.

Every MLA backend but Triton MLA inherits MLACommonBackend's get_supported_head_sizes, [320, 576].
Symptom: an MLA layer of head size 512 on a B200 gets no reason from FlashInfer MLA or CUTLASS MLA.
"""

CAUGHT_BY = ["test_backend_problems_name_the_limit"]

EDIT = (
    '    "FLASHINFER_MLA": _Limits(mla=True, dtypes=_HALF, kernel_block_sizes=(32, 64), head_sizes=(320, 576),\n'
    '                              fp8_formats=("e4m3",)),\n'
    '    "CUTLASS_MLA": _Limits(mla=True, dtypes=_HALF, kernel_block_sizes=(128,), head_sizes=(320, 576),\n'
    '                           fp8_formats=("e4m3",)),\n',
    '    "FLASHINFER_MLA": _Limits(mla=True, dtypes=_HALF, kernel_block_sizes=(32, 64),  # BUG: no head sizes\n'
    '                              fp8_formats=("e4m3",)),\n'
    '    "CUTLASS_MLA": _Limits(mla=True, dtypes=_HALF, kernel_block_sizes=(128,),  # BUG: no head sizes\n'
    '                           fp8_formats=("e4m3",)),\n',
)
