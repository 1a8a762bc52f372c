"""The engine's default token budget is 63 instead of the signature's 64.

Symptom: an engine built without max_num_batched_tokens runs steps of 63 tokens.
"""

CAUGHT_BY = ["test_engine_settings_their_defaults_and_bad_values"]

SOURCE = "_engine_base.py"  # the given engine half

EDIT = (
    "                 max_num_batched_tokens: int = 64,",
    "                 max_num_batched_tokens: int = 63,",
)
