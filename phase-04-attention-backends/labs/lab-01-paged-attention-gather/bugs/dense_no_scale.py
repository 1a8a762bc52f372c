"""The dense oracle forgets the 1/sqrt(d) factor.

Symptom: a sharper softmax than the reference; no error, no NaN, a different answer.
"""

CAUGHT_BY = ["test_dense_attention_matches_reference"]

EDIT = (
    "    scores = k @ q / np.sqrt(q.shape[0])  # [n]\n",
    "    scores = k @ q  # no / sqrt(d)\n",
)
