"""paged_online_attention uses q and the block table as given, without the given conversions.

The two ``np.asarray`` lines at the top (written for you in the starter) are dropped: a query or
a block table passed as a plain list has no ``.ndim``, no ``.shape``. Symptom: AttributeError
for lists, right answers for arrays.
"""

CAUGHT_BY = ["test_takes_lists"]

EDIT = ("    q = np.asarray(q, dtype=np.float64)\n    block_table = np.asarray(block_table)\n", "")
