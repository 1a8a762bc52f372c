"""tiny_config leaves out max_position_embeddings: the config takes transformers' default, 2048.

The weights and the tokens are the same; the engines built on it accept prompts and outputs of up to
2048 tokens instead of 256. Symptom: ``tiny_config().max_position_embeddings`` is 2048.
"""

CAUGHT_BY = ["test_build_model_is_seeded_and_leaves_the_random_state"]

SOURCE = "_runner.py"  # the given model side

EDIT = (
    "        num_key_value_heads=2, head_dim=16, max_position_embeddings=256, initializer_range=0.1,\n",
    "        num_key_value_heads=2, head_dim=16, initializer_range=0.1,\n",
)
