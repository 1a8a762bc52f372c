"""The utilization check refuses 1.0: it accepts (0, 1) instead of (0, 1].

gpu_memory_utilization=1.0 is allowed (the whole card, when nothing else runs on it). Symptom: a
ValueError naming gpu_memory_utilization for 1.0.
"""

CAUGHT_BY = ["test_available_memory_hand_computed", "test_free_memory_that_exactly_covers_the_request_is_enough"]

EDIT = (
    "    if not 0 < gpu_memory_utilization <= 1:\n",
    "    if not 0 < gpu_memory_utilization < 1:\n",
)
