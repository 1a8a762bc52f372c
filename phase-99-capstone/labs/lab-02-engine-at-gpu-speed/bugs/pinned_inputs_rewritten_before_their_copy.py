"""The runner rewrites its pinned host buffers for step N+1 before step N's copies have read them.

A copy from pinned memory reads the host buffer when it runs on the device, not when it is launched.
With the host one step ahead, step N's copies may still be queued when step N+1's inputs are written:
step N then runs with step N+1's positions, slots and tables.
"""

CAUGHT_BY = ["test_tokens_match_generate", "test_scheduling_invariants_hold_every_step"]

EDIT = (
    "        self.input_copies_done.synchronize()\n",
    "",
)
