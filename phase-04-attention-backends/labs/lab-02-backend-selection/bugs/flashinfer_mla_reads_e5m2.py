"""FlashInfer MLA credited with FlashInfer's two fp8 formats; it reads e4m3 only.

FlashInferMLABackend lists fp8 and fp8_e4m3 among its KV-cache dtypes, not fp8_e5m2 as the dense
FlashInfer backend does. Symptom: an MLA layer with an fp8_e5m2 cache on a B200 gets
FLASHINFER_MLA instead of a ValueError saying that no MLA backend reads e5m2.
"""

CAUGHT_BY = ["test_mla_with_no_backend"]

EDIT = (
    '    "FLASHINFER_MLA": _Limits(mla=True, dtypes=_HALF, kernel_block_sizes=(32, 64), head_sizes=(320, 576),\n'
    '                              fp8_formats=("e4m3",)),\n',
    '    "FLASHINFER_MLA": _Limits(mla=True, dtypes=_HALF, kernel_block_sizes=(32, 64), head_sizes=(320, 576),\n'
    '                              fp8_formats=("e4m3", "e5m2")),  # BUG: e4m3 only\n',
)
