"""Every call hashes the request again from its first block.

Right keys, at lab 99-01's cost: a request of 1,000 tokens hashes 62 blocks each time one more block
fills, instead of one. It also overwrites the hashes it was given.
"""

CAUGHT_BY = ["test_block_hashes_extend_one_block_at_a_time"]

EDITS = [
    ("        parent = hashes[-1] if hashes else None\n",
     "        parent = None\n        hashes.clear()  # start over\n"),
]
