"""The matrix is tidied in place: backends without a time are popped from the caller's ``times_us``.

Symptom: every choice is right, but the dispatcher's matrix loses its unmeasured entries on the
first request, so a later reader (the report of what was not measured, a re-run that fills the
gaps) sees a matrix that was never measured that way.
"""

CAUGHT_BY = ["test_choose_measured_leaves_the_matrix_alone"]

EDIT = (
    '    times = _check_times(entry, names)\n',
    '    times = _check_times(entry, names)\n'
    "    for name in [name for name, time in times.items() if time is None]:\n"
    "        times.pop(name)  # nothing to choose from: dropped\n",
)
