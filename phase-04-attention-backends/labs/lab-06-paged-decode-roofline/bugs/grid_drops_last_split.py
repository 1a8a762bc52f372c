"""The grid has capacity // partition splits (floor) instead of ceil(capacity / partition).

When the table's capacity is not a whole number of partitions, the last, partial split is not
launched. Symptom: wrong only for a sequence that reaches into that last partition, which
needs a table with no padding column, or a sequence that fills its table.
"""

CAUGHT_BY = ["test_splits_with_and_without_padding_columns"]

EDIT = (
    "    max_splits = math.ceil(capacity / partition_size)\n",
    "    max_splits = capacity // partition_size\n",
)
