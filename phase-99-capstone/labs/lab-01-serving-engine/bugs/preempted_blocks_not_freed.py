"""A preempted request's blocks are never given back to the KV-cache manager.

The engine forgets them (table, computed tokens) but the manager still holds them for the request: the
preemption frees nothing, the request that needed room still finds none, and when the victim comes back
its admission finds it already holding blocks.
"""

CAUGHT_BY = ["test_small_pool_makes_requests_wait_not_fail", "test_scheduling_invariants_hold_every_step"]

EDIT = (
    "        self.kv_manager.free(request)\n        request.block_ids = []\n",
    "        request.block_ids = []  # the manager is never told\n",
)
