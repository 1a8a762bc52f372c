"""A finished request's blocks are never given back to the pool.

Every finished request leaks its blocks. A roomy pool hides it until the end (the pool is not whole);
a small pool runs dry: running requests preempt each other until nothing fits and no step can run.
"""

CAUGHT_BY = ["test_every_block_returns_to_the_pool", "test_small_pool_makes_requests_wait_not_fail",
             "test_bad_requests_rejected_and_engine_stays_usable"]

EDIT = (
    "        for request in finished:\n            self.kv_manager.free(request)\n",
    "        for request in finished:\n",
)
