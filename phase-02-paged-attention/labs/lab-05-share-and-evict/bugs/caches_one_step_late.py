"""allocate_slots() caches the blocks filled by the tokens computed before this step, not by this step's.

The KV of the scheduled tokens is written during the step being scheduled, so vLLM caches their
full blocks right away: a request that arrives at the next step can hit them. Caching only what
was computed before delays every block by one step, and a prompt's blocks are not cached until its
first decode step. Symptom: right after a prompt's prefill, none of its full blocks has a hash.
"""

CAUGHT_BY = [
    "test_first_request_misses_and_caches_its_full_blocks",
    "test_decode_takes_a_block_at_a_boundary_and_caches_it_when_full",
    "test_random_workload_matches_a_brute_force_model",
]

EDIT = (
    "            self._cache_full_blocks(request, num_computed_tokens + num_new_tokens)\n",
    "            self._cache_full_blocks(request, num_computed_tokens)  # without this step's tokens\n",
)
