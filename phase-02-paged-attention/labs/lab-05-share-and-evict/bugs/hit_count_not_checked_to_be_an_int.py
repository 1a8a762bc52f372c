"""The hit count is only compared with the hit blocks, never checked to be an int.

``np.int64(8) == 8`` and ``8.0 == 8``, so such a count passes the check, the hits are touched and
appended to the table, and the number of new blocks (now a numpy integer or a float) reaches lab
02-01's pool, which refuses it. Symptom: a ValueError about ``num_blocks`` instead of
``num_new_computed_tokens``, and a refused request left holding its hits.
"""

CAUGHT_BY = ["test_counts_that_are_not_python_ints_are_refused_before_any_change"]

SOURCE = "_manager_base.py"

EDIT = (
    "        if isinstance(num_new_computed_tokens, bool) or not isinstance(num_new_computed_tokens, int):\n"
    "            raise ValueError(f\"num_new_computed_tokens must be an integer, got {num_new_computed_tokens!r}\")\n",
    "",
)
