"""Kernel: the output accumulator is kept in the inputs' type (float16), not float32.

It looks harmless: every term of ``tl.dot(p, v)`` is computed in float32 and only the running
sum is rounded. But a long context adds hundreds of small tiles to one large sum, and float16
keeps about three decimal digits: once the accumulator is large, each tile's contribution is
rounded away (a sum of 8 has steps of 1/128). Short prompts pass; a long context drifts by far
more than float16's own rounding of the output.
"""

CAUGHT_BY = ["test_kernel_long_float16_context"]

EDITS = [
    ("    acc = tl.zeros([BLOCK_M, HEAD_DIM], tl.float32)\n",
     "    acc = tl.zeros([BLOCK_M, HEAD_DIM], q_ptr.dtype.element_ty)  # BUG: the running sum in float16\n"),
    ("            acc += tl.dot(p.to(v.dtype), v)  # p in the inputs' type for the tensor cores\n",
     "            acc = (acc + tl.dot(p.to(v.dtype), v)).to(v.dtype)  # BUG: rounded to float16 every tile\n"),
]
