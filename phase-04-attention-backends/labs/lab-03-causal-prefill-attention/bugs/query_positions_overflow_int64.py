"""causal_mask forms each row's position ``start + i`` in int64.

The definition, ``t <= start + i``, written as it reads: for a start near 2**63 the last rows'
positions pass int64's largest value and wrap around to negative numbers, and a start past it is a
Python int numpy cannot convert. ``t - i <= start`` is the same test and always fits. Symptom: with
``start = 2**63 - 2`` the row at position 2**63 sees no key at all; with ``start = 2**64``, numpy's
OverflowError.
"""

CAUGHT_BY = ["test_causal_mask_bounds"]

EDIT = (
    "    return keys[None, :] - np.arange(num_queries)[:, None] <= start\n",
    "    return keys[None, :] <= start + np.arange(num_queries)[:, None]\n",
)
