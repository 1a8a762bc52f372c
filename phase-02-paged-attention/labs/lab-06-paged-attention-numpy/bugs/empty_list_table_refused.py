"""_as_block_table refuses an empty table given as a list: numpy reads [] as float64.

The early return for an empty table is gone, so ``[]`` meets the integer-dtype check and fails it.
Symptom: a ValueError for ``block_table=[]`` with ``seq_len=0`` (a request with nothing cached).
"""

CAUGHT_BY = ["test_paged_attention_takes_lists"]

SOURCE = "_checks.py"  # the given input checks

EDIT = (
    "    if table.size == 0:\n        return table.reshape(0).astype(np.int64)\n",
    "",
)
