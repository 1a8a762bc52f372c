"""The override is never consulted: ``--attention-backend`` has no effect.

Symptom: the default backend comes back whatever the override names, and an override that cannot
run the layer raises nothing. The first tool of anyone debugging a backend stops working.
"""

CAUGHT_BY = ["test_override_is_obeyed", "test_override_that_cannot_run_is_rejected"]

EDIT = (
    '    if override is not None:\n'
    '        if problems[override]:\n',
    '    if False:  # BUG: the override is never consulted\n'
    '        if problems[override]:\n',
)
