"""Each chunk's positions start at 0, as if it began its sequence.

The rotary embedding encodes the wrong position for every token past a request's first chunk, and
the slots follow the wrong positions: later chunks and every decode overwrite the first block.
"""

CAUGHT_BY = ["test_prepare_inputs_matches_brute_force", "test_tokens_match_generate",
             "test_step_inputs_match_brute_force"]

EDIT = (
    "    np.add(computed[req_indices], offsets, out=positions)\n",
    "    positions[:] = offsets  # positions within the chunk, not the sequence\n",
)
