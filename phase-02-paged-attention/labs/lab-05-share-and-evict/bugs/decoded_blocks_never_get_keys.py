"""_cache_full_blocks hands the pool the request's keys without refreshing them first.

Only get_computed_blocks refreshes request.block_hashes, and a running request never calls it
again: the first block that decoding fills has no key, and lab 02-01's pool refuses to cache more
blocks than there are keys. Symptom: the decode step that fills a block fails (the test reports
"request.block_hashes holds N keys" for N + 1 full blocks).
"""

CAUGHT_BY = [
    "test_decode_takes_a_block_at_a_boundary_and_caches_it_when_full",
    "test_a_long_decode_caches_every_block_it_fills",
    "test_random_workload_matches_a_brute_force_model",
]

EDIT = (
    "        # A decode step never goes through get_computed_blocks: the block its tokens just filled has\n"
    "        # no key yet. Refresh the keys before handing them to the pool.\n"
    "        self._update_block_hashes(request)\n",
    "",
)
