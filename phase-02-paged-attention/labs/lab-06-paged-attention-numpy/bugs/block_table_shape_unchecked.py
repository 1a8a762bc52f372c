"""_as_block_table lets a 2-D or a float table through.

``or`` became ``and``: a table is refused only when it is both not 1-D and not integers. Symptom:
a float table indexes with floats (IndexError), a 2-D table gives rows of ids instead of ids.
"""

CAUGHT_BY = ["test_bad_input_gets_a_clear_message"]

SOURCE = "_checks.py"  # the given input checks

EDIT = (
    "    if table.ndim != 1 or not np.issubdtype(table.dtype, np.integer):\n",
    "    if table.ndim != 1 and not np.issubdtype(table.dtype, np.integer):\n",
)
