"""_cache_full_blocks caches the newly full blocks but never records the new count.

num_cached_block stays at its first value, so the next call asks the pool to cache the same blocks
again, and lab 02-01's pool refuses a block that is already cached. Symptom: the decode step after
a prefill that filled a block fails ("a block that is cached already").
"""

CAUGHT_BY = [
    "test_decode_takes_a_block_at_a_boundary_and_caches_it_when_full",
    "test_a_long_decode_caches_every_block_it_fills",
    "test_random_workload_matches_a_brute_force_model",
]

EDIT = (
    "        self.num_cached_block[request.request_id] = num_full_blocks\n",
    "",
)
