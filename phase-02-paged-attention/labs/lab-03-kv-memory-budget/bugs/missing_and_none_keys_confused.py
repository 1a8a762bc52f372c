"""The message about an absent config key says "is None" when the key is missing, and the other way round.

Symptom: kv_bytes_per_token of a config without num_hidden_layers says it is None.
"""

CAUGHT_BY = ["test_every_bad_input_is_refused_by_name"]

SOURCE = "_config.py"

EDIT = (
    '            what = "is missing" if not isinstance(config, dict) or key not in config else "is None"\n',
    '            what = "is missing" if not isinstance(config, dict) or key in config else "is None"\n',
)
