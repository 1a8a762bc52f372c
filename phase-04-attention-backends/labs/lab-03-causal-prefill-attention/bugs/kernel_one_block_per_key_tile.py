"""Kernel: a key tile looks up one block id, its first key's, for all its keys.

Right whenever a key tile lies inside one block (the default blocks of 16 with tiles of 16, or
blocks larger than a tile). When blocks are smaller than a tile, or a tile straddles two blocks
(blocks of 1, 5 or 8 in the test), the tile's later keys are read from the first block's slots
again: the right slot numbers in the wrong block.
"""

CAUGHT_BY = ["test_kernel_block_sizes_and_head_dims"]

EDIT = (
    "        block = tl.load(table + t // BLOCK_SIZE, mask=key_ok, other=0).to(tl.int64)\n",
    "        block = tl.load(table + key_start // BLOCK_SIZE).to(tl.int64)  # BUG: one block id per key tile\n",
)
