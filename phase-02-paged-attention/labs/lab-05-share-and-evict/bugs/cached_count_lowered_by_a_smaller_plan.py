"""``_cache_full_blocks`` hands the pool whatever the plan fills, even when a step is planned smaller
than one before it: fewer full blocks than are cached already.

The pool refuses (``num_cached_blocks <= num_full_blocks``), so re-planning a request's step smaller
raises instead of returning []. Symptom: allocate_slots('C', 1) after allocate_slots('C', 8) with
caching on raises a ValueError from lab 02-01's pool.
"""

CAUGHT_BY = ["test_a_request_that_holds_more_blocks_than_its_next_tokens_need"]

EDIT = (
    "        if num_full_blocks <= num_cached_blocks:\n"
    "            # A step planned smaller than one before it (re-planned before it ran): its blocks are\n"
    "            # cached already, and a cached block is never taken back.\n"
    "            return\n",
    "",
)
