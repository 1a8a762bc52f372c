"""No minimum split length: short tables are cut into splits of a block or two.

Symptom: at batch 1 with 2k tokens, 64 splits of 32 tokens: each program pays for loading q,
writing a summary and being merged, for a few kilobytes of K and V.
"""

CAUGHT_BY = ["test_choose_num_splits_does_not_oversplit"]

EDIT = (
    "    splits = min(1 << (wanted.bit_length() - 1), max(1, capacity // MIN_SPLIT_TOKENS))\n",
    "    splits = 1 << (wanted.bit_length() - 1)\n",
)
