"""merge_partials unpacks its first summary itself, without _as_summary: merge_two checks the rest.

With two or more summaries every one reaches merge_two, whose checks see it, so the list looks
covered. A list of one summary never reaches merge_two: a NaN there comes back as a NaN answer, an
inf as inf. Symptom: merge_partials([summary holding NaN]) returns NaN instead of raising.
"""

CAUGHT_BY = ["test_a_garbage_summary_is_refused"]

EDIT = (
    '    m, denom, acc = _as_summary(partials[0], "merge_partials: partials[0]")\n',
    '    m, denom, acc = partials[0]  # merge_two checks the others\n',
)
