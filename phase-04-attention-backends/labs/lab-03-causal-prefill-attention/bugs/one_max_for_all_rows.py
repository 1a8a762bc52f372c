"""One running max for the whole chunk instead of one per query row.

Any shift cancels in acc / denom, so on ordinary scores the answer is still exact, which is
why this survives most tests. When one row's scores are near +1000 and another's near -1000,
the second row is exponentiated against the first row's max: exp(-2000) = 0, then 0/0 = NaN.
"""

CAUGHT_BY = ["test_large_logits_keep_a_max_per_row"]

EDIT = (
    "            m_new = np.maximum(m[:, h], s.max(axis=1))\n",
    "            m_new = np.maximum(m[:, h], s.max())  # BUG: the chunk's max, shared by every row\n",
)
