"""seq_lens holds the tokens cached before this step, not after its chunk is written.

A decode token then attends to every earlier token but not to itself, and a prefill chunk claims
fewer cached tokens than it has rows (the runner rejects the batch: a first chunk has seq_len 0).
"""

CAUGHT_BY = ["test_tokens_match_generate", "test_step_inputs_match_brute_force"]

EDIT = (
    "            inputs.seq_lens.append(start + num_new_tokens)  # the cache once this chunk is written\n",
    "            inputs.seq_lens.append(start)  # the cache before this step\n",
)
