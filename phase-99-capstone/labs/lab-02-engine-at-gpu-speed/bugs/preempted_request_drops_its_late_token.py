"""A request preempted while its token was on its way loses that token when it arrives.

The token was computed from the right context and is the request's next output. Dropped, the request is
recomputed without it and samples it again, but from a context one token shorter in its outputs: its
outputs shift, or it runs past max_new_tokens.
"""

CAUGHT_BY = ["test_preempted_requests_keep_the_token_on_its_way"]

EDIT = (
    "            if request.status is RequestStatus.FINISHED:\n                continue\n",
    "            if request.status is not RequestStatus.RUNNING:\n                continue  # preempted: dropped\n",
)
