"""A prefill chunk that stops short of the prompt's end still appends its sampled token.

The token is predicted from half a prompt, and it joins the request's tokens in the middle of the
prompt's computation: later chunks then compute the wrong tokens. Invisible while prompts fit in the
budget in one chunk.
"""

CAUGHT_BY = ["test_tokens_match_generate", "test_chunk_size_changes_nothing",
             "test_scheduling_invariants_hold_every_step"]

EDIT = (
    "            if request.num_computed_tokens < request.num_tokens:\n"
    "                continue  # a prefill chunk that is not the prompt's last: its sample means nothing\n",
    "",
)
