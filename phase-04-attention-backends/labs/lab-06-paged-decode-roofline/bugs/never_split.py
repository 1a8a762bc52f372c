"""The chosen count is always 1: one program per (sequence, KV head).

Always correct, and the tests of steps 1-3 pass. Symptom: at batch 1 with 8 KV heads, 8
programs on a 132-SM GPU: a few percent of the memory bandwidth.
"""

CAUGHT_BY = ["test_choose_num_splits_fills_an_idle_gpu", "test_choose_num_splits_ragged_batches"]

EDIT = (
    "    return splits\n",
    "    return 1  # one split is always correct\n",
)
