"""Kernel: the running denominator is kept in the inputs' type (float16), not float32.

The denominator is a sum of one term per key. In float16 it stops growing once the terms of a
tile fall below half a step of the sum: a long context whose first token takes most of the
weight (an attention sink, common in trained models) loses the rest of its keys from the
denominator, and every output comes out too large.
"""

CAUGHT_BY = ["test_kernel_long_float16_context"]

EDITS = [
    ("    denom = tl.zeros([BLOCK_M], tl.float32)\n",
     "    denom = tl.zeros([BLOCK_M], q_ptr.dtype.element_ty)  # BUG: the denominator in float16\n"),
    ("        denom = denom * alpha + tl.sum(p, axis=1)\n",
     "        denom = (denom * alpha + tl.sum(p, axis=1)).to(q.dtype)  # BUG: rounded to float16 every tile\n"),
]
