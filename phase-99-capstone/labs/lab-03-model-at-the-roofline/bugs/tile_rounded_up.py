"""The decode tile rounded up to a power of two instead of down.

Right for head sizes whose ``TILE_BYTES`` share is already a power of two (64 or 128 wide in 16-bit);
a head of 80 or 96 values gets a tile holding more than ``TILE_BYTES`` of keys.
"""

CAUGHT_BY = ["test_choose_decode_config_follows_the_rule"]

EDIT = (
    "    tile = min(MAX_TILE_TOKENS, max(MIN_TILE_TOKENS, 1 << (max(tile, 1).bit_length() - 1)))\n",
    "    tile = min(MAX_TILE_TOKENS, max(MIN_TILE_TOKENS, triton.next_power_of_2(max(tile, 1))))\n",
)
