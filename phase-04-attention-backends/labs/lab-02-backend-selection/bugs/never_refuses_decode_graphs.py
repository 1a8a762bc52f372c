"""Full decode graphs on a NEVER group refused instead of downgraded.

v0.22.1 drops such a mode to PIECEWISE (attention runs between the captured pieces). Symptom: a
ValueError for FULL_DECODE_ONLY and FULL_AND_PIECEWISE on NEVER.

History: v0.10.1 refused them.
"""

CAUGHT_BY = ["test_resolve_cudagraph_mode"]

EDIT = (
    '    if CUDAGRAPH_MODES[mode][0] == "FULL" and support == never:\n'
    '        mode = "PIECEWISE"\n',
    '    if CUDAGRAPH_MODES[mode][0] == "FULL" and support == never:\n'
    '        raise ValueError("resolve_cudagraph_mode: no full graph on NEVER; use PIECEWISE")  # BUG: refused\n',
)
