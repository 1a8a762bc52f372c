"""get_new_blocks hands out one list, kept by the pool, cleared and refilled at each call.

Reusing a buffer saves an allocation, but the caller keeps what it was handed: a request's block
list, a block table. The next call empties that list and fills it with someone else's blocks.
Symptom: after a second get_new_blocks, the first caller's list holds the second caller's blocks.
"""

CAUGHT_BY = ["test_shared_block_stays_held_until_the_last_free", "test_block_ids_are_stable"]

EDIT = (
    "        blocks = []\n        for _ in range(num_blocks):\n",
    "        blocks = self.__dict__.setdefault(\"_handed_out\", [])  # one list, reused by every call\n"
    "        blocks.clear()\n        for _ in range(num_blocks):\n",
)
