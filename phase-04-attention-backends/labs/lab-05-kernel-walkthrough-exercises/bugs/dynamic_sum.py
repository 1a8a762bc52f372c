"""Dynamic shared memory counted as logits + output staging instead of their max.

Symptom: the budget overstates by the smaller of the two (1,024 bytes for the source's
configuration), so partitions that fit are refused. The kernel reuses the logits buffer for
the warps' outputs after a barrier: one buffer, two uses.
"""

CAUGHT_BY = ["test_budget_of_the_source_configuration", "test_budget_follows_the_launcher"]

EDIT = (
    '    dynamic = max(logits, outputs)\n',
    '    dynamic = logits + outputs  # BUG: one buffer serves both, one after the other\n',
)
