"""With several splits, the partition kernel writes its summaries and nothing merges them into ``out``.

The engine's captured batches mostly use one split, so its tokens stay right until a small batch
(the end of a trace) gets several: then ``out`` holds whatever it held.
"""

CAUGHT_BY = ["test_decode_attention_matches_float64"]

EDIT = (
    "    launch_reduce(m, denom, acc, seq_lens, out, size, max_splits)\n",
    "",
)
