"""The reduce reads every split of the grid, not only the ceil(seq_len / partition) that hold
tokens.

The others were never written: they hold whatever the scratch memory held. Symptom: right when
that garbage happens to be harmless (zeros, or a max below the real ones), wrong or NaN
otherwise; with poisoned summaries, always wrong.
"""

CAUGHT_BY = ["test_merge_splits_matches_reference"]

EDIT = (
    "        exists = split < num_splits\n",
    "        exists = split < max_splits  # every split of the grid\n",
)
