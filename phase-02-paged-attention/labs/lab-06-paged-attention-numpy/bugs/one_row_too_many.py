"""Gathers seq_len + 1 rows (an off-by-one in the loop bound, `<= seq_len`).

Symptom: the first unused slot (poisoned) joins every head's softmax; when seq_len fills its
blocks exactly, the extra row needs a block the table does not have and numpy raises IndexError
(or, in a padded table, reads the null block).
"""

CAUGHT_BY = ["test_partial_tail_block_is_masked", "test_paged_matches_dense_exactly", "test_chunked_prefill_write_path"]

EDIT = (
    "    t = np.arange(seq_len)\n",
    "    t = np.arange(seq_len + 1)  # one row past the end\n",
)
