"""A preempted request keeps its (runner-side) block table.

The KV-cache manager freed its blocks, but the engine's copy of the table still lists them; when the
request is admitted again its new blocks are appended after the stale ones, so its tokens are written
to, and read from, blocks that now belong to other requests.
"""

CAUGHT_BY = ["test_small_pool_makes_requests_wait_not_fail", "test_scheduling_invariants_hold_every_step"]

EDIT = (
    "        self.kv_manager.free(request)\n        request.block_ids = []\n",
    "        self.kv_manager.free(request)\n",
)
