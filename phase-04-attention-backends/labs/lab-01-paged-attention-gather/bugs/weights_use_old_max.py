"""The new block's weights use the max from before the block, not the new one.

p = exp(s - m) instead of exp(s - m_new).

Symptom: on the first block m is still -inf, so exp(s + inf) = inf and the output is NaN for
every non-empty sequence. (Initialising m to 0 instead hides the NaN and leaves a stale-max bug
that only huge logits expose.)
"""

CAUGHT_BY = ["test_matches_dense_block_aligned", "test_matches_dense_partial_last_block", "test_seq_len_one"]

EDIT = (
    "        p = np.exp(s - m_new)  # weights of this block's tokens, relative to m_new\n",
    "        p = np.exp(s - m)  # should subtract m_new\n",
)
