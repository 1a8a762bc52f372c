"""The layout's given checks bound counts, positions and lengths from below only, never by int64.

Every one of them becomes int64 in the layout's arithmetic. A stripe, world size or block size of
2**63, or a round of dealing (stripe * world_size) past 2**63 - 1, stops in numpy with an
OverflowError; a uint64 position or length of 2**63 or more wraps around to a negative number and
is dealt to a wrong rank without a word. Symptom: OverflowError or a silent wrong answer, never a
ValueError naming the argument.
"""

CAUGHT_BY = ["test_layout_rejects_bad_input"]

SOURCE = "_checks.py"  # the given input checks

EDITS = [
    ("    if int64 and count > INT64_MAX:\n", "    if False:  # no upper bound\n"),
    ("    if int(stripe) * int(world_size) > INT64_MAX:\n", "    if False:  # no upper bound\n"),
    ('    if array.size and array.max() > INT64_MAX:\n        raise ValueError(f"positions',
     '    if False:  # no upper bound\n        raise ValueError(f"positions'),
    ('    if array.size and array.max() > INT64_MAX:\n        raise ValueError(f"seq_lens',
     '    if False:  # no upper bound\n        raise ValueError(f"seq_lens'),
]
