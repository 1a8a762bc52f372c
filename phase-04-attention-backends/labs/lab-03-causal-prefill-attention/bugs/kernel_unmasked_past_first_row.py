"""Kernel: the unmasked part of the key loop runs up to the tile's last row instead of its first.

Keys up to the first row's position are visible to every row of the tile, so they need no mask;
keys between the first and the last row's positions do. Taking the last row's position lets the
earlier rows of the tile see up to a tile of their future whenever that bound crosses a
multiple of BLOCK_N.
"""

CAUGHT_BY = ["test_kernel_one_prompt_from_scratch", "test_kernel_ragged_batch"]

EDIT = (
    "    full_end = (context_len + first + 1) // BLOCK_N * BLOCK_N\n",
    "    full_end = (context_len + last + 1) // BLOCK_N * BLOCK_N  # BUG: the last row's bound\n",
)
