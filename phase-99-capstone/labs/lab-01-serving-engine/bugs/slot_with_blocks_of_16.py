"""The slot mapping uses blocks of 16 tokens whatever the engine's block_size is.

16 is the kernels' smallest tile and the tests' usual size, so the engine is right there; with blocks
of 32, a token at position p is written to row p % 16 of block table[p // 16], the wrong block for every
token past the first 16, and attention reads rows nobody wrote.
"""

CAUGHT_BY = ["test_sizes_at_the_api_limits"]

EDIT = (
    "            inputs.slot_mapping.extend(table[p // block_size] * block_size + p % block_size for p in positions)\n",
    "            inputs.slot_mapping.extend(table[p // 16] * 16 + p % 16 for p in positions)  # blocks of 16\n",
)
