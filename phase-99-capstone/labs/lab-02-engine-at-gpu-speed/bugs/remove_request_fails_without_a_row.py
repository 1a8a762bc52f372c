"""remove_request takes every request for one with a row.

It pops the request's index without a default, so a request that has no row raises a KeyError where
its docstring promises None. update_states only removes rows it found, so the engine's tokens stay
right. Symptom: ``remove_request`` of an id never added, or removed already, raises a KeyError.
"""

CAUGHT_BY = ["test_remove_request_returns_the_row_it_empties"]

EDIT = (
    "        row = self.req_id_to_index.pop(req_id, None)\n        if row is None:\n            return None\n",
    "        row = self.req_id_to_index.pop(req_id)\n",
)
