"""The margin taken the wrong way round: fastest / runner-up, a number below 1.

Symptom: a 20% lead reported as 0.83; a reader takes it for the fastest being slower.
"""

CAUGHT_BY = ["test_choose_measured_on_every_example_entry", "test_choose_measured_respects_allowed"]

EDIT = (
    '    return MeasuredChoice(best, best_us, second, second_us / best_us)\n',
    '    return MeasuredChoice(best, best_us, second, best_us / second_us)  # BUG: inverted\n',
)
