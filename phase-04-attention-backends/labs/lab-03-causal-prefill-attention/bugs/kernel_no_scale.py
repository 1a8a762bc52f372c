"""Kernel: scores without the 1/sqrt(head_dim) scale.

Every softmax is sharper than it should be: all outputs wrong.
"""

CAUGHT_BY = [
    "test_kernel_one_prompt_from_scratch",
    "test_kernel_ragged_batch",
    "test_kernel_chunk_after_a_cached_prefix",
]

EDIT = (
    "        s = s * SCALE\n",
    "        s = s * 1.0  # BUG: no 1/sqrt(head_dim)\n",
)
