"""Not streaming: gathers the whole sequence, then one ordinary softmax over the score row.

Every key and value is gathered through the table first, then one ordinary softmax runs over
the whole score row (lab 02-06's algorithm).

Symptom: the numbers are right, but the full score row exists at once, which is exactly what
the online recurrence avoids: on a GPU that row would live in slow memory for long contexts.
Only the streaming check notices.
"""

CAUGHT_BY = ["test_streams_block_by_block"]

EDIT = (
    "    m = -np.inf  # running max: nothing seen yet\n",
    "    if seq_len:  # gathers every token, then one ordinary softmax over the whole row\n"
    "        t = np.arange(seq_len)\n"
    "        rows = block_table[t // block_size], t % block_size\n"
    "        return dense_attention(q, k_cache[rows], v_cache[rows])\n"
    "    m = -np.inf  # running max: nothing seen yet\n",
)
