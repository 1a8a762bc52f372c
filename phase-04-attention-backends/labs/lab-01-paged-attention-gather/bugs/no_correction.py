"""Missing correction factor: the history is never rescaled when the running max rises.

acc and denom keep adding each block's weights as they come, never multiplied by corr.

Symptom: exact as long as the first block holds the maximum (corr would be 1 anyway); as soon as
a later block raises m, earlier blocks keep weights computed against the old, smaller max and
count exp(m_new - m_old) times too much.
"""

CAUGHT_BY = ["test_matches_dense_block_aligned", "test_running_max_rises_and_falls", "test_many_block_sizes"]

EDITS = [
    ("        acc = acc * corr + p @ v_block\n", "        acc = acc + p @ v_block  # history not multiplied by corr\n"),
    ("        denom = denom * corr + p.sum()\n", "        denom = denom + p.sum()  # same\n"),
]
