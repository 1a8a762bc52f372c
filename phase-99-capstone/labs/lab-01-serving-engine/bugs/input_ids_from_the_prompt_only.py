"""The batch's token ids are read from the prompt, not from prompt and outputs together.

A prefill chunk reads the right ids, but a decode step's token sits past the prompt's end, where the
prompt has nothing: the batch gets fewer ids than positions. A preempted request's recomputation loses
its outputs the same way.
"""

CAUGHT_BY = ["test_tokens_match_generate", "test_step_inputs_match_brute_force"]

EDIT = (
    "            inputs.input_ids.extend(request.all_token_ids[start : start + num_new_tokens])\n",
    "            inputs.input_ids.extend(request.prompt_token_ids[start : start + num_new_tokens])\n",
)
