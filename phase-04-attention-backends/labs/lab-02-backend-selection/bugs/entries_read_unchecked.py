"""The matrix's entries read without checking that each one is a mapping.

Symptom: a matrix whose ``entries`` hold a string or None ends in an AttributeError ("'str'
object has no attribute 'get'") from inside the lookup instead of a ValueError naming the matrix.
"""

CAUGHT_BY = ["test_choose_measured_bad_matrix"]

SOURCE = "_checks.py"

EDIT = (
    '            or not all(isinstance(e, Mapping) for e in matrix["entries"]):\n',
    '            or False:  # BUG: each entry must be a mapping\n',
)
