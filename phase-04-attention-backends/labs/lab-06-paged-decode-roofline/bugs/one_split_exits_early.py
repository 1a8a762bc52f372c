"""The partition kernel's early exit also stops split 0: with one split, an empty sequence's output is never written.

`if start >= seq_len: return` for every split, not only the splits past the first. With several
splits nothing changes (the reduce writes zeros for a sequence with no split), but with one split
the partition kernel is the only writer of `out`, and a sequence of length 0 returns before its
zeros are stored: its rows hold whatever the memory `q.new_empty` handed back held, which is often
zero by luck (fresh pages, the right answer) and NaN or stale values otherwise.
"""

CAUGHT_BY = ["test_new_output_is_written_where_fresh_memory_is_nan"]

EDIT = (
    "    if split > 0 and start >= seq_len:\n",
    "    if start >= seq_len:\n",
)
