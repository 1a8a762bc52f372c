"""The count divides the target by the batch size only, forgetting that every sequence already
has one program per KV head.

Symptom: num_kv_heads times too many programs (8x with 8 KV heads): splits too short to pay
for their summaries and their merge.
"""

CAUGHT_BY = ["test_choose_num_splits_does_not_oversplit"]

EDIT = (
    "    wanted = max(1, WAVES * num_sms // max(1, batch * num_kv_heads))\n",
    "    wanted = max(1, WAVES * num_sms // max(1, batch))\n",
)
