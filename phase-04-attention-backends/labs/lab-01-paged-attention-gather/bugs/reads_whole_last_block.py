"""Every block is read in full, the partly filled last one included.

valid = block_size instead of min(block_size, seq_len - start).

Symptom: right whenever seq_len is a multiple of block_size; otherwise the unused tail of the last
block joins the softmax (with poisoned slots: off by orders of magnitude, or NaN).
"""

CAUGHT_BY = ["test_matches_dense_partial_last_block", "test_many_block_sizes", "test_seq_len_one"]

EDIT = (
    "        valid = min(block_size, seq_len - start)  # the last block may be partial\n",
    "        valid = block_size  # the last block may hold fewer tokens\n",
)
