"""The head size is always derived as ``hidden_size // num_attention_heads``.

Right for Llama, Qwen2 and OPT; Gemma-7B says head_dim 256 where the division gives 192, so its
cache is counted a quarter too small.
"""

CAUGHT_BY = ["test_explicit_head_dim_wins", "test_page_size_bytes_is_one_block_of_one_layer"]

EDIT = (
    '    head_dim = config.get("head_dim")\n',
    '    head_dim = None  # always derived\n',
)
