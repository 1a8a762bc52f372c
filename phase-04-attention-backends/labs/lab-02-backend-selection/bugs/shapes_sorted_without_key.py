"""The matrix's shapes sorted as they are for the error message.

An entry without one of SHAPE_KEYS gives None there, and None does not compare with an int.
Symptom: a shape the matrix does not have, asked of a matrix with an entry without "batch", is a
TypeError from sorted(), not the ValueError listing the shapes.
"""

SOURCE = "_checks.py"

CAUGHT_BY = ["test_choose_measured_error_lists_shapes_of_mixed_types"]

EDIT = (
    '        have = sorted({tuple(e.get(k) for k in SHAPE_KEYS) for e in matrix["entries"]}, key=str)\n',
    '        have = sorted({tuple(e.get(k) for k in SHAPE_KEYS) for e in matrix["entries"]})  # BUG: no key\n',
)
