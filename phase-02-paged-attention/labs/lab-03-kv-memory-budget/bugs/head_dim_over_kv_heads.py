"""The head size is derived as hidden_size // num_key_value_heads instead of // num_attention_heads.

The hidden size is split among the query heads; KV heads are fewer with grouped-query attention,
and dividing by them gives heads 4 times (Llama 3) or 7 times (Qwen2.5) too large. Symptom:
512 KiB per token for Llama-3-8B where 128 KiB are expected.
"""

CAUGHT_BY = ["test_llama_3_8b_takes_128_kib_per_token", "test_mha_and_gqa", "test_explicit_head_dim_wins"]

EDIT = (
    "        head_dim = hidden_size // num_heads\n",
    "        head_dim = hidden_size // num_kv_heads\n",
)
