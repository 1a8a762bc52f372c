"""choose_measured reads the entry's ``times_us`` without the given check.

Symptom: a fastest time of 0 us ends in a ZeroDivisionError (the margin divides by it), a time written
as a string in a TypeError from the sort, a negative or NaN time in a made-up choice, a ``times_us``
that is a list in an AttributeError; none of them a ValueError naming ``times_us``.
"""

CAUGHT_BY = ["test_choose_measured_refuses_a_time_that_is_not_positive"]

EDIT = (
    "    times = _check_times(entry, names)\n",
    "    times = entry.get(\"times_us\", {})  # BUG: the times taken unchecked\n",
)
