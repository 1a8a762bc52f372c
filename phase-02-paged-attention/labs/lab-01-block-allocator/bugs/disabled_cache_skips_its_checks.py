"""cache_full_blocks returns at once when caching is disabled, before checking its arguments.

The early return for enable_caching=False sits at the top of the method. Nothing is cached either
way, but a caller's bad range (running backwards, or past the full blocks) now passes silently,
and shows only the day caching is turned on. Symptom: no ValueError for a bad call on a pool
built with enable_caching=False.
"""

CAUGHT_BY = ["test_caching_disabled_never_hits"]

EDITS = [
    ("        if not self.enable_caching:\n            return\n", ""),
    (
        "        if not 0 <= num_cached_blocks <= num_full_blocks:\n",
        "        if not self.enable_caching:  # before the checks: a bad call passes silently\n"
        "            return\n"
        "        if not 0 <= num_cached_blocks <= num_full_blocks:\n",
    ),
]
