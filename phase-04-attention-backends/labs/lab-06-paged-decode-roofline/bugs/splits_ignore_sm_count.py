"""The count assumes an H100's 132 SMs whatever GPU it is given.

Symptom: too many splits on a smaller GPU, too few on a larger one.
"""

CAUGHT_BY = ["test_choose_num_splits_does_not_oversplit"]

EDIT = (
    "    wanted = max(1, WAVES * num_sms // max(1, batch * num_kv_heads))\n",
    "    wanted = max(1, WAVES * 132 // max(1, batch * num_kv_heads))  # an H100\n",
)
