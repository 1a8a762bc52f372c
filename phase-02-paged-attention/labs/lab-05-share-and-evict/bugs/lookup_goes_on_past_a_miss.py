"""The prefix lookup skips a key that misses and goes on looking up the keys after it.

A key covers its block and everything before it, so the blocks found after a miss do not extend
the hit: the missing block's tokens are not in the cache, yet the request is told they are, and
it attends over a cache with a hole. Symptom: with the key of tokens 0-7 evicted and the key of
tokens 0-11 still cached, the lookup returns 2 blocks (8 tokens) instead of 1 (4 tokens).
"""

CAUGHT_BY = ["test_lookup_stops_at_the_first_miss"]

EDIT = (
    "            if block is None:  # a chain: once a block misses, every later block misses too\n"
    "                break\n",
    "            if block is None:\n"
    "                continue  # skip the miss, keep looking\n",
)
