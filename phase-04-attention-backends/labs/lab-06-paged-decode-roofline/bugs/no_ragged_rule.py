"""No rule for ragged batches: the count assumes every sequence is as long as the table.

Symptom: a batch of 64 with one 64k-token sequence among 1k-token ones gets one split: the
short sequences finish at once and the long one runs alone on 8 programs.
"""

CAUGHT_BY = ["test_choose_num_splits_ragged_batches"]

EDIT = (
    "    if batch > 1 and capacity >= RAGGED_CAPACITY:\n"
    "        splits = max(splits, math.ceil(capacity / RAGGED_SPLIT_TOKENS))\n",
    "",
)
