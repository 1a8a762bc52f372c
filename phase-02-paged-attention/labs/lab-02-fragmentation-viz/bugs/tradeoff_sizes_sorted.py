"""block_size_tradeoff sorts and deduplicates the block sizes (``sorted(set(block_sizes))``).

The answer then has one entry per distinct size, smallest first, and entry i no longer answers for
the i-th size asked. Symptom: block_sizes [16, 1, 256, ...] give a block_size array [1, 2, 8, ...].
"""

CAUGHT_BY = ["test_block_size_tradeoff_matches_brute_force"]

EDIT = (
    "    for b in sizes:\n",
    "    sizes = sorted(set(sizes))\n"
    "    for b in sizes:\n",
)
