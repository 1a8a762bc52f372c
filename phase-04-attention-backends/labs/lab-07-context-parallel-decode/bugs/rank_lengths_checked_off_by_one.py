"""rank_summaries' check refuses lengths below -1: a length of -1 passes, as a shard of no token.

Symptom: rank_summaries with a length of -1 answers the identity instead of raising a ValueError
naming seq_lens.
"""

CAUGHT_BY = ["test_rank_summaries_reject_bad_input"]

SOURCE = "_checks.py"

EDIT = (
    "    if batch and (seq_lens.min() < 0 or seq_lens.max() > capacity):\n",
    "    if batch and (seq_lens.min() < -1 or seq_lens.max() > capacity):\n",
)
