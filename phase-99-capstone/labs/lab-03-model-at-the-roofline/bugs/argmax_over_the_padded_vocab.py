"""The greedy token taken over the head's padded rows too, not only the real vocabulary.

vLLM pads the head to a multiple of 64 rows for its GEMM; the padding's logits are whatever its rows
give (zeros here, garbage elsewhere), and a token id past the vocabulary can win.
"""

CAUGHT_BY = ["test_sample_greedy_samples_the_rows_asked_for"]

EDIT = (
    "    argmax_rows(row_logits, vocab_size, out=sampled)\n",
    "    argmax_rows(row_logits, row_logits.shape[1], out=sampled)\n",
)
