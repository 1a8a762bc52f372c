"""The attention-sinks rule read as "below Hopper" instead of "not SM 9.0".

``has_sink and not is_device_capability(90)`` sends sinks to Triton on every GPU but SM 9.0,
Blackwell included. Symptom: on a B200, a sinks model with head size 96 finds no backend.
"""

CAUGHT_BY = [
    "test_candidate_order",
    "test_sinks_choices",
]

EDIT = (
    '    if "sinks" in features and capability != (9, 0):',
    '    if "sinks" in features and capability < (9, 0):  # BUG: Blackwell is not below Hopper',
)
