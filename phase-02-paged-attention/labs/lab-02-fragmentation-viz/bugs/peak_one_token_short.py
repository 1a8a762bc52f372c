"""serve_paged checks a request's peak one token short, prompt_len + output_len - 2.

A request that peaks one token past what the pool can hold passes the check, then can never grow
into its last block: it preempts itself, and the replay stops with a RuntimeError (or runs forever
without the guard) instead of refusing the stream up front. Symptom:
serve_paged([(0, 10, 8)], num_blocks=5, block_size=4) raises no ValueError naming stream.
"""

CAUGHT_BY = ["test_bad_input_names_the_argument"]

EDIT = (
    "        peak = int((stream[:, 1] + stream[:, 2] - 1).max())\n",
    "        peak = int((stream[:, 1] + stream[:, 2] - 2).max())\n",
)
