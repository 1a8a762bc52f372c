"""Each block is softmax-normalized on its own and the block outputs are averaged.

Symptom: every block gets the same total weight, however well its keys match the query; exact
only when there is a single block, wrong for any longer sequence.
"""

CAUGHT_BY = ["test_matches_dense_block_aligned", "test_running_max_rises_and_falls", "test_many_block_sizes"]

EDITS = [
    ("        acc = acc * corr + p @ v_block\n",
     "        acc = acc + (p / p.sum()) @ v_block  # each block normalized on its own ...\n"),
    ("        denom = denom * corr + p.sum()\n", "        denom = denom + 1  # ... and the blocks averaged\n"),
]
