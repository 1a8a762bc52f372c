"""paged_attention uses q and the block table as given, without the given conversions.

The two lines at the top (written for you in the starter) are dropped: a query or a block table
passed as a plain list has no ``.ndim``, no ``.shape``. Symptom: AttributeError for lists, right
answers for arrays.
"""

CAUGHT_BY = ["test_paged_attention_takes_lists"]

EDIT = ("    q = np.asarray(q, dtype=np.float64)\n    block_table = _as_block_table(block_table)\n", "")
