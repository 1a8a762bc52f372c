"""FlashInfer's head sizes listed as (64, 128, 512): 256 forgotten.

FlashInferBackend.get_supported_head_sizes is [64, 128, 256, 512]. Symptom: a layer with head
size 256 gets "head size 256 is not one of (64, 128, 512)" from FlashInfer, on a 12.1 GPU too.
"""

CAUGHT_BY = ["test_backend_problems_empty_when_it_can_run"]

EDIT = (
    '    "FLASHINFER": _Limits(mla=False, dtypes=_HALF, kernel_block_sizes=(16, 32, 64), '
    'head_sizes=(64, 128, 256, 512),\n',
    '    "FLASHINFER": _Limits(mla=False, dtypes=_HALF, kernel_block_sizes=(16, 32, 64), '
    'head_sizes=(64, 128, 512),\n',
)
