"""get_computed_blocks answers a disabled cache with a bare return, which is None.

With enable_caching=False the lookup has nothing to find, but the scheduler still unpacks its
answer as (blocks, num_tokens): None makes every admission fail. Symptom: get_computed_blocks
returns None instead of ([], 0) when enable_caching is False.
"""

CAUGHT_BY = ["test_caching_disabled_never_hits"]

EDIT = (
    "            return [], 0\n",
    "            return  # nothing cached: nothing to return\n",
)
