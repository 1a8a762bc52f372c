"""InputBatch.add_request fills the request's row but returns None instead of the row.

The engine's own update_states does not use the value, so the tokens stay right. Symptom: a caller
that asks which row the request got (as the docstring promises) gets None.
"""

CAUGHT_BY = ["test_add_request_returns_the_row_it_fills"]

EDIT = (
    "        self.block_table.add_row(block_ids, row)\n        return row\n",
    "        self.block_table.add_row(block_ids, row)\n        return None\n",
)
