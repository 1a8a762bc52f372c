"""seq_lens counts the cache before this step's tokens, not after.

Attention stops short of the tokens written this very step: a decode does not see itself, a chunk sees
none of its own tokens.
"""

CAUGHT_BY = ["test_prepare_inputs_matches_brute_force", "test_tokens_match_generate",
             "test_step_inputs_match_brute_force"]

EDIT = (
    "    buffers.seq_lens.np[:n] = computed + num_scheduled\n",
    "    buffers.seq_lens.np[:n] = computed  # the cache before this step\n",
)
