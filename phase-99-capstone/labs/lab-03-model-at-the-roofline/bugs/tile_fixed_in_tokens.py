"""The decode tile kept at lab 04-06's 64 tokens whatever the head size.

Tuned on 128-wide fp16 heads, 64 tokens are 16 KiB of keys per load; at this model's 64-wide bf16
heads they are half that, and the loop's fixed costs per tile double relative to the bytes it moves.
"""

CAUGHT_BY = ["test_choose_decode_config_follows_the_rule"]

EDIT = (
    "    tile = TILE_BYTES // (head_dim * itemsize)\n",
    "    tile = 64  # lab 04-06's tile\n",
)
