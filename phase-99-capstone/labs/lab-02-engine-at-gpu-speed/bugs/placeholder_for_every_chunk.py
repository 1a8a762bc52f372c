"""Every scheduled request gets a placeholder, even a prefill chunk that stops inside its prompt.

A partial chunk samples nothing usable; counting a token on its way makes the request look one token
longer than it is, so the scheduler plans a chunk past the prompt's end.
"""

CAUGHT_BY = ["test_tokens_match_generate", "test_scheduling_invariants_hold_every_step"]

EDIT = (
    "            if request.num_computed_tokens == request.num_tokens:\n"
    "                request.num_output_placeholders += 1\n",
    "            if True:  # a placeholder whether the chunk reached the end or not\n"
    "                request.num_output_placeholders += 1\n",
)
