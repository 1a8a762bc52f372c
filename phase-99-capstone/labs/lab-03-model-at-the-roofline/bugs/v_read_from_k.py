"""``split_qkv`` cuts v right after q, where k is: the values are the keys.

The shapes match (k and v are both ``num_kv_heads * head_dim`` wide), so nothing complains; the
attention returns weighted keys.
"""

CAUGHT_BY = ["test_split_qkv_gives_each_projection", "test_tokens_and_logits_match_generate"]

EDIT = (
    "    v = qkv[:, q_width + kv_width :].view(tokens, num_kv_heads, head_dim)\n",
    "    v = qkv[:, q_width : q_width + kv_width].view(tokens, num_kv_heads, head_dim)\n",
)
