"""FULL on a NEVER group downgraded instead of refused.

resolve_cudagraph_mode_and_sizes raises for full graphs of mixed batches when a group supports no
full graph at all; only the decode graphs are downgraded. Symptom: FULL on NEVER resolves to
PIECEWISE with no error.
"""

CAUGHT_BY = ["test_no_full_graph_of_mixed_batches_on_never"]

EDIT = (
    '        if support == never:\n'
    '            raise ValueError(',
    '        if False:  # BUG: no refusal\n'
    '            raise ValueError(',
)
