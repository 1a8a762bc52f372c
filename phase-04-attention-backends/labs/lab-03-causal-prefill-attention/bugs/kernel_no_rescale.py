"""Kernel: the running max moves but the tile's history (denominator and accumulator) is not rescaled.

Right while every row's first key tile holds its largest score; wrong as soon as a later tile
raises a row's max, which random data does all the time.
"""

CAUGHT_BY = [
    "test_kernel_one_prompt_from_scratch",
    "test_kernel_ragged_batch",
    "test_kernel_chunk_after_a_cached_prefix",
]

EDITS = [
    ("        denom = denom * alpha + tl.sum(p, axis=1)\n",
     "        denom = denom + tl.sum(p, axis=1)  # BUG: history not rescaled\n"),
    ("        acc = acc * alpha[:, None]\n",
     "        acc = acc  # BUG: same\n"),
]
