"""The number of splits counted by flooring the table over the partition: ``capacity // size``.

A partition is rounded up to whole blocks, so it rarely divides the table: a full table of 5 blocks
in 3 splits of 2 blocks needs 3 of them, and the floor launches 2. The tokens of the missing split
are never attended to, for the longest sequences only.
"""

CAUGHT_BY = ["test_decode_attention_contract"]

EDIT = (
    "    max_splits = math.ceil(capacity / size)\n",
    "    max_splits = capacity // size\n",
)
