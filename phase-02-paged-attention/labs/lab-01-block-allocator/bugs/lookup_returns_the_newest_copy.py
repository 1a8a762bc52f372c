"""get_cached_block returns the copy cached last instead of the first one cached.

Both copies hold the right tokens, so no request reads wrong data, but the answer disagrees with
vLLM's (the first copy, the oldest entry of the dict) and with the free queue's order: the newest
copy is the one its request may still be extending hits on. Symptom: with copies in blocks 1 and
2 (cached in that order), the lookup finds block 2.
"""

CAUGHT_BY = ["test_block_ids_are_stable", "test_random_interleavings_keep_the_invariants"]

EDIT = (
    "        return next(iter(same_hash.values()))\n",
    "        return list(same_hash.values())[-1]  # the copy cached last\n",
)
