"""Ties go to the backend listed last: the rank enters the sort key negated.

Equal times must give the same answer for the same matrix, decided by an order someone chose
(the matrix's). Symptom: of two backends measured equal, the one listed later wins.
"""

CAUGHT_BY = ["test_choose_measured_breaks_ties_by_matrix_order"]

EDIT = (
    '        (times[name], rank, name)\n',
    '        (times[name], -rank, name)  # BUG: ties to the last listed\n',
)
