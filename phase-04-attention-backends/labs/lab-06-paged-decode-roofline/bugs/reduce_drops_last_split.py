"""The reduce counts seq_len // partition splits (floor): the last, partial split is dropped.

Symptom: right when seq_len is a whole number of partitions, wrong otherwise (and a sequence
shorter than one partition gets zeros).
"""

CAUGHT_BY = ["test_merge_splits_matches_reference", "test_every_split_count_gives_the_same_answer"]

EDIT = (
    "    num_splits = tl.minimum(tl.cdiv(seq_len, partition_size), max_splits)\n",
    "    num_splits = tl.minimum(seq_len // partition_size, max_splits)  # floor\n",
)
