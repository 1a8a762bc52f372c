"""The scheduler plans with the tokens the host knows, not with request.num_tokens.

A request whose token is on its way has computed every token the host knows of, so it is left out of
the next step; it decodes only once its token has been read, one step in two. The tokens are right,
the run takes twice the steps.
"""

CAUGHT_BY = ["test_the_host_runs_one_step_ahead", "test_preempted_requests_keep_the_token_on_its_way"]

EDIT = (
    "        return min(request.num_tokens - request.num_computed_tokens, budget)\n",
    "        return min(len(request.all_token_ids) - request.num_computed_tokens, budget)  # the known tokens\n",
)
