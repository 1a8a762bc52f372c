"""A kernel-style grid of at least one block, and no first-block guard on the correction factor.

A kernel's grid often visits a block even when there is nothing to read in it (max(1, ...)
blocks, or a tile whose every score is masked), and a masked reduction gives that block a max of
-inf. Then m_new is still -inf and corr = exp(m - m_new) = exp(-inf - (-inf)) = NaN, which
spreads into acc and denom. Symptom: right for every non-empty sequence; NaN for seq_len = 0
with a block reserved, an IndexError with an empty table. The solution's guard
(corr = 0 while m == -inf) is what keeps the first block safe.
"""

CAUGHT_BY = ["test_empty_sequence_gives_zeros"]

EDITS = [
    ("    for start in range(0, seq_len, block_size):\n",
     "    for start in range(0, max(seq_len, 1), block_size):  # a grid of at least one block\n"),
    ("        m_new = max(m, s.max())\n",
     "        m_new = max(m, s.max(initial=-np.inf))  # an empty block's max: -inf\n"),
    ("        corr = np.exp(m - m_new) if m != -np.inf else 0.0\n",
     "        corr = np.exp(m - m_new)  # no first-block guard\n"),
]
