"""A request that reaches max_new_tokens while preempted stays in the waiting queue.

Its last token arrived after its preemption: it is finished and its blocks are free, but the queue still
holds it, and it is admitted again and computes tokens past its limit.
"""

CAUGHT_BY = ["test_preempted_requests_keep_the_token_on_its_way"]

EDIT = (
    "            if not was_running:\n                self.waiting.remove(request)\n",
    "",
)
