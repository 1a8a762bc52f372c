"""Forgotten scale: scores are q . k, not q . k / sqrt(head_dim).

Symptom: the softmax is sqrt(head_dim) = 8 times too sharp for head_dim 64; the output
leans towards the single best-matching token and misses the gate by far.
"""

CAUGHT_BY = ["test_triton_matches_dense", "test_head_dim_128"]

EDIT = (
    '        scores = tl.sum(k * q[None, :], axis=1) * scale\n',
    '        scores = tl.sum(k * q[None, :], axis=1)  # BUG: no * scale\n',
)
