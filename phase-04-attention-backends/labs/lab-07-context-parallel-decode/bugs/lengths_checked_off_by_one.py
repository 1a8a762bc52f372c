"""The lengths check refuses lengths below -1: a length of -1 passes.

-1 is the classic "no length" sentinel of padded batches; counted as a length it gives a rank -1
tokens or none. Symptom: local_seq_lens([4, -1], ..) answers instead of raising a ValueError naming
seq_lens.
"""

CAUGHT_BY = ["test_layout_rejects_bad_input"]

SOURCE = "_checks.py"

EDIT = (
    "    if array.size and array.min() < 0:\n"
    '        raise ValueError(f"seq_lens must be >= 0, got {int(array.min())}")\n',
    "    if array.size and array.min() < -1:\n"
    '        raise ValueError(f"seq_lens must be >= 0, got {int(array.min())}")\n',
)
