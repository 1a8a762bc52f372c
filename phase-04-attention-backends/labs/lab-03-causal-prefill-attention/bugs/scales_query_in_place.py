"""The query is scaled in place (``q *= 1/sqrt(head_dim)``) instead of the scores.

``np.asarray(q, dtype=np.float64)`` hands back the caller's own array when it already is
float64, so the caller's queries come back scaled: the next layer or the next call sees other
numbers. With a read-only array numpy refuses the write.
"""

CAUGHT_BY = ["test_reads_only_and_returns_float64"]

EDIT = (
    "    scale = 1.0 / np.sqrt(head_dim)\n",
    "    q *= 1.0 / np.sqrt(head_dim)  # BUG: the caller's array, scaled in place\n    scale = 1.0\n",
)
