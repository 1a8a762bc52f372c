"""Block ids multiplied in int32: the physical block id is not widened before ``* stride_block``.

Symptom: right on every cache of fewer than 2**31 elements; on a larger one (4 GiB of fp16)
the offset of a block near the end wraps around, and the kernel reads the wrong place or
faults (on the CPU the interpreter wraps around too, and the child process of the test crashes).
"""

CAUGHT_BY = ["test_offsets_past_2_31_elements"]

EDIT = (
    '        physical = tl.load(block_table_ptr + logical).to(tl.int64)  # int64: offsets pass 2**31\n',
    '        physical = tl.load(block_table_ptr + logical)  # BUG: int32, block * stride overflows\n',
)
