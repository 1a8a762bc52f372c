"""generate queues its prompts one by one and leaves them queued when a later one is refused.

The ValueError names the bad prompt, but the prompts before it wait in the engine: the caller's retry
of the corrected batch fails on ids already taken, and the next generate serves them uninvited.
"""

CAUGHT_BY = ["test_generate_refuses_a_bad_batch_and_queues_none_of_it"]

SOURCE = "_engine_base.py"

EDIT = (
    "            for request in queued:  # all or nothing: the caller gets no half-queued batch to clean up\n"
    "                self.waiting.remove(request)\n"
    "                del self.requests[request.request_id]\n",
    "",
)
