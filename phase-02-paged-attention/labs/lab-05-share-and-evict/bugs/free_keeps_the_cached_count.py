"""free drops the request's table but keeps its num_cached_block entry.

A preempted request comes back under the same id; allocate_slots starts num_cached_block with
setdefault, so the stale count (the blocks cached before the preemption) wins over the number of
hits, and the blocks it recomputes past its hits are never cached. Symptom: a readmitted request's
recomputed full block has no key.
"""

CAUGHT_BY = [
    "test_a_preempted_request_comes_back_through_the_cache",
    "test_random_workload_matches_a_brute_force_model",
]

EDIT = (
    "        self.num_cached_block.pop(request.request_id, None)\n",
    "",
)
