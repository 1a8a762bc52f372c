"""int32 offsets: the block id stays int32, so block * stride_block wraps around once the cache
holds more than 2**31 elements.

Symptom: right on every ordinary cache; garbage, an illegal address or a crash on a large
one (on the CPU the interpreter segfaults).
"""

CAUGHT_BY = ["test_cache_beyond_2_31_elements"]

EDIT = (
    "        block = tl.load(table + token // BLOCK_SIZE, mask=valid, other=0).to(tl.int64)\n",
    "        block = tl.load(table + token // BLOCK_SIZE, mask=valid, other=0)  # int32 offsets\n",
)
