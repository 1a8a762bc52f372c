"""The free queue's links are part of a block's repr.

The dataclass then prints a block with its neighbours, their neighbours, and so on: the whole
queue, one nested repr per block. Symptom: RecursionError (or pages of text) when a block of a
large pool is printed, in a log line or a failing assert.
"""

CAUGHT_BY = ["test_a_blocks_repr_does_not_walk_the_queue"]

EDITS = [
    ("    prev_free_block: KVCacheBlock | None = field(default=None, repr=False)\n",
     "    prev_free_block: KVCacheBlock | None = None\n"),
    ("    next_free_block: KVCacheBlock | None = field(default=None, repr=False)\n",
     "    next_free_block: KVCacheBlock | None = None\n"),
]
