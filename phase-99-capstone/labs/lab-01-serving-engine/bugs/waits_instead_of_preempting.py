"""A running request that finds no free block just waits for the next step; nobody is preempted.

When every running request needs a block and none is free, none can advance, none finishes, and no
block is ever freed: the engine is stuck (step() finds nothing to schedule). A pool too small for
everyone then fails instead of making requests wait.
"""

CAUGHT_BY = ["test_small_pool_makes_requests_wait_not_fail", "test_scheduling_invariants_hold_every_step"]

EDIT = (
    "            while new_blocks is None:\n",
    "            while new_blocks is None and False:  # no preemption\n",
)
