"""Each chunk's positions start at 0, as if it were the start of its sequence.

The rotary embedding then encodes the wrong position for every token past a request's first chunk:
every decode token and every later prefill chunk. The keys land in the right slots, but carry the
wrong rotation: the tokens differ from generate's after the first.
"""

CAUGHT_BY = ["test_tokens_match_generate", "test_chunk_size_changes_nothing", "test_step_inputs_match_brute_force"]

EDIT = (
    "            inputs.positions.extend(positions)\n",
    "            inputs.positions.extend(range(num_new_tokens))  # positions of the chunk, not of the sequence\n",
)
