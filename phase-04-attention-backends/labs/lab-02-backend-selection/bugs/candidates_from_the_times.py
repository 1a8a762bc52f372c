"""The candidates read from the entry's ``times_us`` instead of ``matrix["backends"]``.

The list of backends is the matrix's; a time under a name the list does not have is not a
candidate, and the list's order breaks ties. Symptom: a backend measured once and then dropped
from the list still wins, and ties follow the order of ``times_us``.
"""

CAUGHT_BY = ["test_choose_measured_only_listed_backends_compete", "test_choose_measured_breaks_ties_by_matrix_order"]

EDIT = (
    "        for rank, name in enumerate(names)\n",
    "        for rank, name in enumerate(times)  # BUG: the matrix's list of backends\n",
)
