"""The reduce merges one tile of SPLIT_TILE splits and stops.

Symptom: right while a sequence has at most SPLIT_TILE splits (64: most shapes), wrong for a
longer one (a 512k-token sequence split in 1k-token partitions has 512).
"""

CAUGHT_BY = ["test_merge_splits_more_splits_than_one_tile", "test_split_counts_past_one_merge_chunk"]

EDIT = (
    "    for first in range(0, num_splits, SPLIT_TILE):\n",
    "    for first in range(0, tl.minimum(num_splits, SPLIT_TILE), SPLIT_TILE):  # the first tile only\n",
)
