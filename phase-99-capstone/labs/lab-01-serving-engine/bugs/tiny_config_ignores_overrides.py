"""tiny_config builds its config from the defaults alone: the keyword arguments are dropped.

Symptom: ``tiny_config(vocab_size=300).vocab_size`` is 512.
"""

CAUGHT_BY = ["test_build_model_is_seeded_and_leaves_the_random_state"]

SOURCE = "_runner.py"  # the given model runner

EDIT = (
    "    values.update(overrides)\n",
    "",
)
