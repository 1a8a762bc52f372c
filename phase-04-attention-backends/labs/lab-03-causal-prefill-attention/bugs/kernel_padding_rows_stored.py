"""Kernel: the whole query tile is stored, its padding rows included.

Rows past a chunk's last token belong to the next chunk in ``q`` (or to no chunk at all, after
the last one): storing them writes garbage over other sequences' outputs, whenever the program
that owns those rows ran first, and into padding rows the caller never asked for. On a GPU,
which program runs first changes from run to run.
"""

CAUGHT_BY = [
    "test_kernel_one_prompt_from_scratch",
    "test_kernel_ragged_batch",
    "test_kernel_grouped_query_heads",
]

EDIT = (
    "out.to(out_ptr.dtype.element_ty), mask=row_ok[:, None])\n",
    "out.to(out_ptr.dtype.element_ty))  # BUG: every row of the tile stored\n",
)
