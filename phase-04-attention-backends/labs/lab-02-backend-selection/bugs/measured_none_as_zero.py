"""An unmeasured backend (time None) counted as 0 us.

None in the matrix means "not run, failed, or gave a wrong answer". Read as 0 it is the fastest
time there is. Symptom: a backend that crashed on that shape is the one chosen for it.
"""

CAUGHT_BY = [
    "test_choose_measured_skips_unmeasured",
    "test_choose_measured_on_every_example_entry",
    "test_choose_measured_bad_requests",
]

EDIT = (
    '        (times[name], rank, name)\n'
    '        for rank, name in enumerate(names)\n'
    '        if times.get(name) is not None and (allowed is None or name in allowed)\n',
    '        (times.get(name) or 0.0, rank, name)  # BUG: None counts as 0 us\n'
    '        for rank, name in enumerate(names)\n'
    '        if allowed is None or name in allowed\n',
)
