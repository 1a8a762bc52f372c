"""A capability pair refused below major 7: ``(1, 0)`` is a ValueError.

The V100 (7.0) is the oldest GPU the table names, but device_capability only checks that a
pair is possible (major >= 1, a one-digit minor); an old GPU is refused by the limits of each
backend (FlashAttention below 8.0, FlashInfer below 7.5), each with its own reason. Symptom: a
ValueError naming gpu for (1, 0).
"""

CAUGHT_BY = ["test_device_capability_passes_any_possible_pair"]

EDIT = (
    '        and gpu[0] >= 1\n',
    '        and gpu[0] >= 7  # BUG: the oldest GPU of the table, not the oldest possible\n',
)
