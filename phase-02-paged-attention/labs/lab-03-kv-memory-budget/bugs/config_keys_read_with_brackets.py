"""num_attention_heads and hidden_size are read as ``config[key]``, without the given ``_config_int``.

A missing key is a KeyError, not a ValueError naming it; 0 heads divides hidden_size by zero; a
hidden_size written as a string ('4096') fails inside the arithmetic. Symptom: KeyError for a
config without num_attention_heads.
"""

CAUGHT_BY = ["test_every_bad_input_is_refused_by_name"]

EDITS = [
    ('    num_heads = _config_int(config, "num_attention_heads")\n',
     '    num_heads = config["num_attention_heads"]\n'),
    ('        hidden_size = _config_int(config, "hidden_size")\n',
     '        hidden_size = config["hidden_size"]\n'),
]
