"""num_key_value_heads is read as ``config.get("num_key_value_heads") or num_heads``.

The ``or`` default treats every falsy value as absent: a config with 0 KV heads is read as
multi-head attention, and a negative count is taken as given (32 % -8 is 0, so it even divides the
heads). Symptom: kv_bytes_per_token of a config with num_key_value_heads 0 returns 512 KiB, and with
-8 a negative byte count, instead of a ValueError naming num_key_value_heads.
"""

CAUGHT_BY = ["test_every_bad_input_is_refused_by_name"]

EDIT = (
    '    num_kv_heads = _config_int(config, "num_key_value_heads", default=num_heads)\n',
    '    num_kv_heads = config.get("num_key_value_heads") or num_heads\n',
)
