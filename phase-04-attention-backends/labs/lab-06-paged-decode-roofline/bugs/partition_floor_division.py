"""The partition is ``capacity // num_splits`` rounded to whole blocks: a floor where the rule says
a ceiling.

Symptom: when ``capacity / num_splits`` lies just above a whole number of blocks the partition comes
out a block short (18 blocks in 17 splits: 16 tokens instead of 32), the split count grows past
``num_splits``, and the summaries no longer have the shape the rule promises.
"""

CAUGHT_BY = ["test_partition_size_rounds_up_to_whole_blocks"]

SOURCE = "_host.py"  # the partition arithmetic is given: it lives in _host.py

EDIT = (
    "    tokens = max(1, math.ceil(capacity / num_splits))\n",
    "    tokens = max(1, capacity // num_splits)  # BUG: rounds down\n",
)
