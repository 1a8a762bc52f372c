"""hidden_size is read, and checked against the heads, even when the config gives head_dim.

A config with an explicit head_dim needs no hidden_size to size its cache: hidden_size is only the
fallback for a head_dim that is absent or None. Reading it first refuses a valid config that has no
hidden_size (or a None one). Symptom: kv_bytes_per_token of Gemma-7B without hidden_size raises
"config['hidden_size'] is missing" instead of returning 448 KiB.
"""

CAUGHT_BY = ["test_an_explicit_head_dim_needs_no_hidden_size"]

EDIT = (
    '    head_dim = config.get("head_dim")\n'
    '    if head_dim is None:\n'
    '        hidden_size = _config_int(config, "hidden_size")\n',
    '    head_dim = config.get("head_dim")\n'
    '    hidden_size = _config_int(config, "hidden_size")\n'
    '    if head_dim is None:\n',
)
