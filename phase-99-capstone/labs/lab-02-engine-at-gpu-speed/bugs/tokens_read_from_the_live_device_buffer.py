"""The sampled tokens are read from the runner's device buffer, not from the step's own copy of them.

With the host one step ahead, step N+1 has been launched before step N's tokens are read; once it has
run (the eager timing) the buffer holds step N+1's tokens. Right under the lazy timing, wrong under the
eager one: a GPU may show either.
"""

CAUGHT_BY = ["test_tokens_match_generate"]

EDIT = (
    "        tokens = model_output.sampled_token_ids.tolist()\n",
    "        tokens = self.runner.buffers.sampled[: len(model_output.req_ids)].tolist()  # the live buffer\n",
)
