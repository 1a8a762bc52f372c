"""The caller's config is filled in: the KV head count it lacked is written into the dict it came in.

Symptom: every answer is right, but the config now says the model has ``num_key_value_heads``,
which it never said: a second reader of the same dict (the engine's model loader, another lab's
budget) sees a model that was never configured, and ``config.setdefault`` looks like a harmless cache.
"""

CAUGHT_BY = ["test_configs_are_left_alone"]

EDIT = (
    "    return num_layers, num_kv_heads, head_dim\n",
    '    config.setdefault("num_key_value_heads", num_kv_heads)  # remembered for the next call\n'
    "    return num_layers, num_kv_heads, head_dim\n",
)
