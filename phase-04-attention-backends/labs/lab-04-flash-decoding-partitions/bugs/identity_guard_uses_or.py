"""The identity guard fires when either side is empty, not only when both are.

The guard is written with ``or`` instead of ``and``.

The guard against exp(-inf - (-inf)) is needed only when both maxima are -inf; with ``or`` an
empty side swallows the real one, so one empty partition erases everything merged with it.
Symptom: merge(identity, a) is the identity instead of a; merge_partials with identities in the
list loses the summaries merged before and after them.
"""

CAUGHT_BY = [
    "test_merge_with_the_identity_changes_nothing",
    "test_merge_partials_matches_dense_attention",
]

EDIT = (
    "    if m == -np.inf:\n",
    "    if m_a == -np.inf or m_b == -np.inf:  # should be both: max(m_a, m_b) == -inf\n",
)
