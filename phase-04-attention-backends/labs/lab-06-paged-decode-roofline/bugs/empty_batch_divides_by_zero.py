"""The split rule divides by ``batch * num_kv_heads`` unguarded.

Symptom: a decode step with no sequence (batch 0, as an engine's step of prefills only has) raises
ZeroDivisionError inside choose_num_splits instead of returning an empty output.
"""

CAUGHT_BY = ["test_an_empty_batch"]

EDIT = (
    "    wanted = max(1, WAVES * num_sms // max(1, batch * num_kv_heads))\n",
    "    wanted = max(1, WAVES * num_sms // (batch * num_kv_heads))  # BUG: batch may be 0\n",
)
