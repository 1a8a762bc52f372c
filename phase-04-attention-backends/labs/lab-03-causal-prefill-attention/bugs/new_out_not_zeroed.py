"""The output made when no ``out`` is given is allocated with ``empty_like``, not zeroed.

The kernel writes only the chunks' rows; the padding rows of the new tensor are whatever the memory
held, where the docstring promises a new zero tensor. Symptom: NaN (or stale values) in the rows of
the returned output past ``query_start_loc[-1]``, and in every row when nothing is computed; often
zeros by luck, always NaN once uninitialized memory is filled with NaN.
"""

CAUGHT_BY = ["test_kernel_new_out_is_zero_where_nothing_is_written"]

EDIT = (
    "        out = torch.zeros_like(q)\n",
    "        out = torch.empty_like(q)  # BUG: the rows the kernel never writes hold whatever the memory held\n",
)
