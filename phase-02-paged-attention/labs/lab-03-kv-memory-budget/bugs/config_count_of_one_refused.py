"""The config's positive-integer check refuses 1 along with 0.

Symptom: kv_bytes_per_token of a model of one layer and one head raises a ValueError.
"""

CAUGHT_BY = ["test_a_model_of_one_layer_and_one_head"]

SOURCE = "_config.py"

EDIT = (
    "    if isinstance(value, bool) or not isinstance(value, int) or value < 1:\n"
    '        raise ValueError(f"config[{key!r}] must be a positive integer, got {value!r}")\n',
    "    if isinstance(value, bool) or not isinstance(value, int) or value <= 1:\n"
    '        raise ValueError(f"config[{key!r}] must be a positive integer, got {value!r}")\n',
)
