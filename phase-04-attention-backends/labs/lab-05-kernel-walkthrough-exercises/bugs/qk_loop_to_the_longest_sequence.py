"""The kernel is handed ``max(seq_lens)`` for ``max_len``, as if no token past the longest sequence mattered.

``max_len`` is k's length (a cache's capacity), and the kernel uses it twice: as the end of the tile
loop and as the stride of k's and the scores' rows. With every sequence shorter than k, sequence 1
reads its keys from sequence 0's padding, and the scores past the longest sequence are never
written. Right whenever the longest sequence fills k. Symptom: wrong scores from the second
sequence on, and garbage where -inf belongs.
"""

CAUGHT_BY = ["test_qk_triton_k_longer_than_every_sequence"]

EDIT = (
    "        qk_scores_kernel[(num_seqs,)](q, k, seq_lens, scores, scale, max_len, head_dim,\n",
    "        qk_scores_kernel[(num_seqs,)](q, k, seq_lens, scores, scale, int(seq_lens.max()), head_dim,\n",
)
