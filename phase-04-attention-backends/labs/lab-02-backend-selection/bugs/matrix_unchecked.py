"""choose_measured reads the matrix unchecked.

Symptom: a matrix that is None, a list, or a mapping without ``backends`` or ``entries`` lists is
an AttributeError, a TypeError or a KeyError from the inside, not a ValueError naming the matrix.
"""

SOURCE = "_checks.py"

CAUGHT_BY = ["test_choose_measured_bad_matrix"]

EDIT = (
    '    if not isinstance(matrix, Mapping) or not isinstance(matrix.get("backends"), list) \\\n'
    '            or not isinstance(matrix.get("entries"), list) \\\n'
    '            or not all(isinstance(e, Mapping) for e in matrix["entries"]):\n',
    "    if False:  # BUG: the matrix unchecked\n",
)
