"""num_cached_tokens is recorded right after the lookup, before allocate_slots says whether the request
gets in.

A request at the head of the queue whose blocks do not fit keeps waiting, with the hits of that refused
try already recorded; by the time it is admitted those hits may have been evicted, and the counter
reports hits its admission never used. The tokens stay right.
"""

CAUGHT_BY = ["test_num_cached_tokens_is_the_hits_of_the_admission_that_succeeds"]

EDITS = [
    (
        "            hits, num_hit_tokens = self.kv_manager.get_computed_blocks(request)\n",
        "            hits, num_hit_tokens = self.kv_manager.get_computed_blocks(request)\n"
        "            if request.num_cached_tokens < 0:\n"
        "                request.num_cached_tokens = num_hit_tokens  # before the allocation is known\n",
    ),
    (
        "            if request.num_cached_tokens < 0:\n"
        "                request.num_cached_tokens = num_hit_tokens\n"
        "            request.status = RequestStatus.RUNNING\n",
        "            request.status = RequestStatus.RUNNING\n",
    ),
]
