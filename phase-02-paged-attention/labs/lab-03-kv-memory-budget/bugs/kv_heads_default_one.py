"""A config without ``num_key_value_heads`` is read as one KV head (multi-query attention).

The key is absent from configs written before grouped-query attention existed, and there it
means "one KV head per query head". Symptom: OPT-125m takes 3 KiB per token instead of 36.
"""

CAUGHT_BY = ["test_opt_125m_has_no_kv_heads_key", "test_page_size_bytes_is_one_block_of_one_layer"]

EDIT = (
    '    num_kv_heads = _config_int(config, "num_key_value_heads", default=num_heads)\n',
    '    num_kv_heads = _config_int(config, "num_key_value_heads", default=1)\n',
)
