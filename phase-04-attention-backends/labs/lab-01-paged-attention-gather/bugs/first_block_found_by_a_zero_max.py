"""The first block is recognised by a running max of 0, as if m started at 0 and no score were 0.

``corr`` is forced to 0 whenever ``m == 0``, meant for "nothing seen yet". But m starts at -inf,
and a real maximum can be exactly 0.0 (a key orthogonal to the query): the next block then throws
away everything summed so far. Symptom: right for random data, wrong when the first block's
largest score is exactly 0 (the later blocks alone are averaged).
"""

CAUGHT_BY = ["test_a_running_max_of_exactly_zero"]

EDIT = (
    "        corr = np.exp(m - m_new) if m != -np.inf else 0.0\n",
    "        corr = np.exp(m - m_new) if m != 0.0 else 0.0  # m == 0 taken for 'no history'\n",
)
