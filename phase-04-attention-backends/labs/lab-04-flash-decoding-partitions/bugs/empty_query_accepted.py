"""The check on q tests its number of dimensions only: a q of no dimension (d = 0) passes.

Scores over d = 0 are 0 / sqrt(0): NaN, or attention weights that ignore the keys. Symptom: attend_partial
of an empty q answers instead of raising a ValueError naming q.
"""

CAUGHT_BY = ["test_bad_input_gets_a_clear_message"]

SOURCE = "_merge_checks.py"

EDIT = (
    "    if q.ndim != 1 or q.shape[0] == 0:\n",
    "    if q.ndim != 1:\n",
)
