"""The reduce returns early for a sequence with no split, so an empty sequence's output is never written.

`if num_splits == 0: return` looks like a harmless shortcut (nothing to merge), but with several
splits the reduce is the only writer of `out`: an empty sequence's rows keep whatever the memory
that `new_empty` handed back held, which is often zero by luck (fresh pages, the right answer)
and NaN or stale values otherwise. Store the zeros instead (the guarded division gives them).
"""

CAUGHT_BY = ["test_new_output_is_written_where_fresh_memory_is_nan", "test_merge_splits_matches_reference"]

EDIT = (
    "    state = (seq * num_heads + head) * max_splits\n",
    "    if num_splits == 0:\n        return  # no split to merge\n    state = (seq * num_heads + head) * max_splits\n",
)
