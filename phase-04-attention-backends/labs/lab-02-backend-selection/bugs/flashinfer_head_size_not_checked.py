"""FlashInfer's head sizes not checked: its get_supported_head_sizes (64, 128, 256) left out.

Symptom: on a B200 a model with head size 96 or 80 gets FLASHINFER, whose kernels do not exist
for that size, instead of FLASH_ATTN or FLEX_ATTENTION; an override to FlashInfer with head size
80 is accepted.
"""

CAUGHT_BY = [
    "test_backend_problems_name_the_limit",
    "test_dense_defaults",
    "test_sinks_choices",
    "test_override_that_cannot_run_is_rejected",
]

EDIT = (
    '    "FLASHINFER": _Limits(mla=False, dtypes=_HALF, head_sizes=(64, 128, 256)),\n',
    '    "FLASHINFER": _Limits(mla=False, dtypes=_HALF, head_sizes=None),  # BUG: head sizes not checked\n',
)
