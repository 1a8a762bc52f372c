"""The config is never checked to be a dict.

A list (a config.json read as something else) then reads as a config without keys: the error says
num_hidden_layers is missing, not what is wrong. Symptom: kv_bytes_per_token of a list raises a
ValueError about a missing key.
"""

CAUGHT_BY = ["test_every_bad_input_is_refused_by_name"]

EDIT = (
    "    if not isinstance(config, dict):\n",
    "    if False:  # a config is a dict\n",
)
