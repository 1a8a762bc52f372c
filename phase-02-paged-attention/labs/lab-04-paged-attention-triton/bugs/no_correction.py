"""Missing correction factor: when the running max grows, acc and denom are not rescaled.

Symptom: exact while the first block holds the maximum score, wrong as soon as a later
block raises it: the earlier blocks then weigh exp(m_new - m_old) times too much.
"""

CAUGHT_BY = ["test_online_softmax_rising_max", "test_triton_matches_dense"]

EDIT = (
    '        denom = denom * correction + tl.sum(p, axis=0)\n'
    '        acc = acc * correction + tl.sum(p[:, None] * v, axis=0)\n',
    '        denom = denom + tl.sum(p, axis=0)  # BUG: no correction\n'
    '        acc = acc + tl.sum(p[:, None] * v, axis=0)  # BUG: no correction\n',
)
