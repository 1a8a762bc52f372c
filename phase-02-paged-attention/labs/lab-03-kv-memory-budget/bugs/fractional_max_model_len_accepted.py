"""max_concurrency's check of max_model_len joins its conditions with ``and``: a float passes.

Symptom: max_concurrency(.., max_model_len=100.5) answers instead of raising a ValueError.
"""

CAUGHT_BY = ["test_every_bad_input_is_refused_by_name"]

EDIT = (
    "    if isinstance(max_model_len, bool) or not isinstance(max_model_len, int) or max_model_len < 1:\n",
    "    if isinstance(max_model_len, bool) and not isinstance(max_model_len, int) and max_model_len < 1:\n",
)
