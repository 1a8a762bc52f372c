"""FlashInfer's head sizes not checked: its get_supported_head_sizes (64, 128, 256, 512) left out.

Symptom: FLASHINFER chosen on a B200 for head size 96, which its kernels are not compiled for;
FlashAttention should have been chosen.
"""

CAUGHT_BY = [
    "test_backend_problems_name_the_limit",
    "test_dense_defaults",
    "test_sinks_choices",
    "test_override_that_cannot_run_is_rejected",
]

EDIT = (
    'kernel_block_sizes=(16, 32, 64), head_sizes=(64, 128, 256, 512),\n',
    'kernel_block_sizes=(16, 32, 64),  # BUG: any head size\n',
)
