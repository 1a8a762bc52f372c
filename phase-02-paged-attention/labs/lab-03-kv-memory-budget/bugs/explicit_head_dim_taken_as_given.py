"""An explicit head_dim is used as the config gives it, without the positive-integer check.

Symptom: kv_bytes_per_token of a head_dim of 0 answers 0 bytes (of "256", a string repeated)
instead of raising a ValueError naming head_dim.
"""

CAUGHT_BY = ["test_every_bad_input_is_refused_by_name"]

EDIT = (
    '        head_dim = _config_int(config, "head_dim")\n',
    "        pass  # head_dim as the config gives it\n",
)
