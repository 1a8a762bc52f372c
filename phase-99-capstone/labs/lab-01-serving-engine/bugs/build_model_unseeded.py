"""build_model forks the random state but never seeds it: each model gets new random weights.

Symptom: two models built with the same seed differ (and a demo's tokens change from run to run).
"""

CAUGHT_BY = ["test_build_model_is_seeded_and_leaves_the_random_state"]

SOURCE = "_runner.py"  # the given model runner

EDIT = (
    "        torch.manual_seed(seed)\n",
    "",
)
