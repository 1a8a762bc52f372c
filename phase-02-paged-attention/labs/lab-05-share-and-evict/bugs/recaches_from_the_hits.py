"""allocate_slots() resets num_cached_block to the number of hits on every call, not only for a new request.

For a running request (no hits) it drops to 0 at every decode step, and _cache_full_blocks tries
to cache the request's full blocks again from block 0: the pool refuses a block that is already
cached (vLLM asserts the same). Symptom: the first decode step after a prompt with a full block
raises "already cached".
"""

CAUGHT_BY = [
    "test_decode_takes_a_block_at_a_boundary_and_caches_it_when_full",
    "test_random_workload_matches_a_brute_force_model",
]

EDIT = (
    "        self.num_cached_block.setdefault(request.request_id, len(new_computed_blocks))\n",
    "        self.num_cached_block[request.request_id] = len(new_computed_blocks)  # also for a running request\n",
)
