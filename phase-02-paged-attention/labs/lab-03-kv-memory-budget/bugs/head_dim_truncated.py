"""head_dim is hidden_size // num_attention_heads even when the heads do not divide hidden_size.

A config like that must name its head_dim; truncated, every byte count is silently off. Symptom:
kv_bytes_per_token of hidden_size 4100 for 32 heads answers instead of raising a ValueError.
"""

CAUGHT_BY = ["test_every_bad_input_is_refused_by_name"]

EDIT = (
    "        if hidden_size % num_heads:\n",
    "        if False:  # the heads always divide hidden_size\n",
)
