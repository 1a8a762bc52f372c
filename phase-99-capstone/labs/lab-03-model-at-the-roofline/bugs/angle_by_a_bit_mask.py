"""A column's angle taken with a bit mask, ``c & (half - 1)``, instead of ``c % half``.

The mask is the remainder only when half a head is a power of two (heads of 16, 64, 128). For heads of
24 or 80 it hands most pairs the angle of another frequency, or of another head's column, and the
rotated queries and keys are wrong.
"""

CAUGHT_BY = ["test_rotary_and_cache_any_head_shape"]

EDIT = (
    "    angle = c % half\n",
    "    angle = c & (half - 1)\n",
)
