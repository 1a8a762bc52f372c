"""merge_splits accepts summaries of any floating dtype (the check only asks for a float).

Symptom: float16 summaries from a caller's own split kernel are merged without a word: their
denominators may have overflowed float16's 65504 and their accumulators lost precision before the
merge ever saw them, instead of a clear TypeError naming merge_splits.
"""

CAUGHT_BY = ["test_merge_splits_bad_input_gets_a_clear_error"]

SOURCE = "_host.py"  # the input checks are given: they live in _host.py

EDIT = (
    "        if t.dtype != wanted:\n",
    "        if t.dtype != wanted and not t.is_floating_point():  # any float will do\n",
)
