"""The check that prefix-cache hits go to a new request only looks at its computed tokens, not at the
blocks it holds.

A request whose first chunk has blocks but no computed token yet passes for new: the hits are appended
after its blocks, and its table no longer matches its tokens. Symptom: allocate_slots with hits for
such a request changes its table instead of raising a ValueError.
"""

CAUGHT_BY = ["test_bad_input_is_a_clear_error_and_changes_nothing"]

SOURCE = "_manager_base.py"

EDIT = (
    "        if new_computed_blocks and req_blocks:\n",
    "        if new_computed_blocks and request.num_computed_tokens:\n",
)
