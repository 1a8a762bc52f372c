"""The dispatcher sorts the wrong way and picks the slowest backend.

Symptom: math SDPA (which materializes the whole score matrix) chosen for every shape.
"""

CAUGHT_BY = ["test_choose_measured_on_every_example_entry", "test_choose_measured_respects_allowed"]

EDIT = (
    '    candidates.sort()  # by time',
    '    candidates.sort(reverse=True)  # BUG: slowest first; by time',
)
