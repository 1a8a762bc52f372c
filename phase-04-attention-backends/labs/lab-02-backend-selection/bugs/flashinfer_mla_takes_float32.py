"""FlashInfer MLA given every dtype of the lab; it takes float16 and bfloat16 only.

Like every MLA backend, FlashInferMLABackend's supported_dtypes are the two half types. Symptom: a
float32 MLA layer on a B200 gets FLASHINFER_MLA instead of a ValueError naming float32.
"""

CAUGHT_BY = ["test_mla_with_no_backend"]

EDIT = (
    '    "FLASHINFER_MLA": _Limits(mla=True, dtypes=_HALF,',
    '    "FLASHINFER_MLA": _Limits(mla=True, dtypes=DTYPES,  # BUG: _HALF\n                             ',
)
