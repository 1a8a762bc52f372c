"""FlashInfer's kernel block sizes typed as (16, 32, 63): 63 for 64.

supports_block_size takes a multiple of one of the kernel block sizes, so a typo in the list
lets through a block size no kernel has. Symptom: backend_problems('FLASHINFER', 'H100',
'float16', 128, 63) finds nothing wrong with a block of 63 tokens.
"""

CAUGHT_BY = ["test_backend_problems_name_the_limit"]

EDIT = (
    '    "FLASHINFER": _Limits(mla=False, dtypes=_HALF, kernel_block_sizes=(16, 32, 64), '
    'head_sizes=(64, 128, 256, 512),\n',
    '    "FLASHINFER": _Limits(mla=False, dtypes=_HALF, kernel_block_sizes=(16, 32, 63),  # BUG: 63 for 64\n'
    '                          head_sizes=(64, 128, 256, 512),\n',
)
