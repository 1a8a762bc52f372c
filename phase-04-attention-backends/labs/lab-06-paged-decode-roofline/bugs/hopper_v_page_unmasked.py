"""Hopper kernel: the last page's V taken whole, its unused slots unmasked.

A tensor-descriptor load has no ``mask=``/``other=``: the copy engine brings the whole page, and
slots past the sequence's end hold whatever the cache holds there. Their scores are set to -inf, so
their weights are 0, but 0 * NaN is NaN. Symptom: NaN (or inf) outputs whenever the unused slots of a
sequence's last page are poisoned with NaN or inf; right with finite garbage.
"""

SOURCE = "going-further/hopper_decode.py"

CAUGHT_BY = ["test_one_split_matches_reference", "test_split_summaries_match_reference"]

EDIT = (
    "        v = tl.where(valid[:, None], v, 0.0)\n",
    "",
)
