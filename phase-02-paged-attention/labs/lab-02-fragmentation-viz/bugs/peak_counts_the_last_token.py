"""serve_paged sizes a request's peak as prompt_len + output_len tokens, one too many.

The last sampled token's KV is never written (no step computes it), so a request peaks at
prompt_len + output_len - 1 tokens. Counting one more refuses, with a ValueError, a stream whose
longest request fills the pool's free blocks exactly. Symptom: a valid stream rejected as one that
could never fit.
"""

CAUGHT_BY = ["test_bad_input_names_the_argument"]

EDIT = (
    "        peak = int((stream[:, 1] + stream[:, 2] - 1).max())\n",
    "        peak = int((stream[:, 1] + stream[:, 2]).max())  # one token too many\n",
)
