"""The runner takes head_dim from hidden_size / num_attention_heads even when the config names its own.

``or`` became ``and``: a config with head_dim 32 and hidden_size / heads = 16 gets caches of 16.
Symptom: a shape error in the first step, or wrong tokens.
"""

CAUGHT_BY = ["test_a_model_whose_head_dim_is_not_hidden_size_over_heads"]

SOURCE = "_runner.py"  # the given model runner

EDIT = (
    "        self.head_dim = getattr(config, \"head_dim\", None) or config.hidden_size",
    "        self.head_dim = getattr(config, \"head_dim\", None) and config.hidden_size",
)
