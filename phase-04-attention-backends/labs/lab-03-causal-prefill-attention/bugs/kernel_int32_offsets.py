"""Kernel: block ids stay int32, so ``block * stride_block`` wraps around past 2**31 elements.

Right on every cache the other tests build; on a cache of more than 2**31 elements (a few
layers of a real model's cache), a sequence in the top blocks reads another block, or an
illegal address (the interpreter's process crashes).
"""

CAUGHT_BY = ["test_kernel_cache_beyond_2_31_elements"]

EDIT = (
    "        block = tl.load(table + t // BLOCK_SIZE, mask=key_ok, other=0).to(tl.int64)\n",
    "        block = tl.load(table + t // BLOCK_SIZE, mask=key_ok, other=0)  # BUG: int32 offsets\n",
)
