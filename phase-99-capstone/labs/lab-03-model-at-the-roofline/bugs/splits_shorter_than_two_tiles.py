"""Splits chosen to fill the GPU with no floor on their length.

A batch of a few short sequences gets splits of a tile or less: each loads its queries, writes a
summary and gets merged, for a handful of tokens.
"""

CAUGHT_BY = ["test_choose_decode_config_follows_the_rule"]

EDIT = (
    "    splits = min(1 << (wanted.bit_length() - 1), max(1, capacity // (MIN_SPLIT_TILES * tile)))\n",
    "    splits = 1 << (wanted.bit_length() - 1)\n",
)
