"""Each row samples from its chunk's first token instead of its last.

For a decode the two are the same token; for a chunk that ends a prompt the first output token is
sampled from the logits of the chunk's first position.
"""

CAUGHT_BY = ["test_prepare_inputs_matches_brute_force", "test_tokens_match_generate",
             "test_step_inputs_match_brute_force"]

EDIT = (
    "    buffers.logits_indices.np[:n] = cu_num_tokens - 1\n",
    "    buffers.logits_indices.np[:n] = cu_num_tokens - num_scheduled  # the chunk's first row\n",
)
