"""The row sampled is the chunk's first token, not its last.

For a decode (one row) it makes no difference; for a prompt, the first output token is predicted from
the prompt's first token of the chunk only: the first output token is wrong, and everything after it.
"""

CAUGHT_BY = ["test_tokens_match_generate", "test_logits_match_generate_within_float32_tolerance",
             "test_step_inputs_match_brute_force"]

EDIT = (
    "            inputs.logits_indices.append(inputs.query_start_loc[-1] - 1)  # the chunk's last token\n",
    "            inputs.logits_indices.append(inputs.query_start_loc[-2])  # the chunk's first token\n",
)
