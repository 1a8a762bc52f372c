"""The decode tile not clamped to ``MIN_TILE_TOKENS`` from below.

Right while a head's keys leave ``TILE_BYTES`` room for at least 16 tokens; a wide head (512 float32
values: 8 tokens) gets a tile smaller than ``tl.dot``'s smallest side, which the decode refuses.
"""

CAUGHT_BY = ["test_choose_decode_config_follows_the_rule"]

EDIT = (
    "    tile = min(MAX_TILE_TOKENS, max(MIN_TILE_TOKENS, 1 << (max(tile, 1).bit_length() - 1)))\n",
    "    tile = min(MAX_TILE_TOKENS, 1 << (max(tile, 1).bit_length() - 1))\n",
)
