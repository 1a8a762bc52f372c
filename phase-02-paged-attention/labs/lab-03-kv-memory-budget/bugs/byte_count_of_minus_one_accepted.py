"""The byte-count check refuses values below -1: -1 passes.

Symptom: available_kv_memory(weights_memory=-1) answers a budget one byte too large instead of
raising a ValueError.
"""

CAUGHT_BY = ["test_every_bad_input_is_refused_by_name"]

SOURCE = "_config.py"

EDIT = (
    "    if isinstance(value, bool) or not isinstance(value, int) or value < 0:\n",
    "    if isinstance(value, bool) or not isinstance(value, int) or value < -1:\n",
)
