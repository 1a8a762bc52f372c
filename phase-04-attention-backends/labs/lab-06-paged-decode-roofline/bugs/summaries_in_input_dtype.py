"""The split summaries are allocated in the input's dtype (float16) instead of float32.

Symptom: denominators of long splits and accumulators lose precision (or overflow float16's
65504), and merge_splits, which takes float32 summaries, rejects them.
"""

CAUGHT_BY = ["test_split_summaries_dtypes"]

EDITS = [
    (
        "    m = q.new_empty((batch, num_heads, max_splits), dtype=torch.float32)\n",
        "    m = q.new_empty((batch, num_heads, max_splits))\n",
    ),
    (
        "    acc = q.new_empty((batch, num_heads, max_splits, head_dim), dtype=torch.float32)\n",
        "    acc = q.new_empty((batch, num_heads, max_splits, head_dim))\n",
    ),
]
