"""The kernel's function calls the given checks as the torch reference does, ``for_triton=False``.

Symptom: what only the kernel cannot take reaches the launch: K and V of different strides are read
with K's strides (a wrong answer), a cache whose head_dim is not contiguous is read as if it were,
and bfloat16 on Triton's interpreter comes back silently wrong, instead of a ValueError each.
"""

CAUGHT_BY = ["test_the_kernel_refuses_what_it_cannot_read"]

EDIT = (
    "    seq_len = _check_inputs(q, k_cache, v_cache, block_table, seq_len, for_triton=True)  # a Python int\n",
    "    seq_len = _check_inputs(q, k_cache, v_cache, block_table, seq_len, for_triton=False)  # BUG\n",
)
