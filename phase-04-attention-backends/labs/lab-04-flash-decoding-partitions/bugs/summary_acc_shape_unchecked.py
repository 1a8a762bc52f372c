"""The summary check refuses a 0-d acc but lets an acc of two or more dimensions through.

A [2, d] acc is no summary of one query; merged with another of the same shape, or alone, it comes out
as a [2, d] "output" without a word. Symptom: merge_partials of such a summary answers instead of
raising a ValueError naming acc.
"""

CAUGHT_BY = ["test_a_garbage_summary_is_refused"]

SOURCE = "_merge_checks.py"

EDIT = (
    "    if acc.ndim != 1:\n",
    "    if acc.ndim == 0:\n",
)
