"""max_num_seqs is not checked when admitting.

Every waiting request that fits the budget and the pool is admitted: the running batch grows past the
limit the engine was configured with (in vLLM, the size its CUDA graphs and buffers were made for).
"""

CAUGHT_BY = ["test_scheduling_invariants_hold_every_step"]

EDIT = (
    "        while self.waiting and budget > 0 and len(self.running) < self.max_num_seqs"
    " and not output.preempted_req_ids:\n",
    "        while self.waiting and budget > 0 and not output.preempted_req_ids:\n",
)
