"""The summary check takes m and denom as they come, without making them floats.

A summary's m or denom that is no number (a string, None) then fails deep inside, in ``math.isnan``,
with a TypeError that says nothing about the summary. Symptom: merge_two and merge_partials of a
summary whose m is a string raise a TypeError where a ValueError naming the numbers is expected.
"""

CAUGHT_BY = ["test_a_garbage_summary_is_refused"]

SOURCE = "_merge_checks.py"

EDIT = (
    "    try:\n        m, denom = float(m), float(denom)\n    except (TypeError, ValueError):\n"
    '        raise ValueError(f"{what}: m and denom must be numbers, got m={m!r}, denom={denom!r}") from None\n',
    "",
)
