"""local_seq_lens clips the last round's share at 0 but not at stripe.

rank r gets rest - r * stripe of the last, partial round, at most one stripe. Without the upper
bound rank 0 is given the whole remainder, rank 1 all but a stripe of it, and the counts no longer
sum to the sequence's length. Symptom: right when the remainder fits in one stripe; too many tokens
on the first ranks otherwise.
"""

CAUGHT_BY = ["test_local_seq_lens_count_each_ranks_tokens"]

EDIT = (
    "    return full_rounds * stripe + np.clip(rest - ranks * stripe, 0, stripe)\n",
    "    return full_rounds * stripe + np.maximum(rest - ranks * stripe, 0)  # no upper bound\n",
)
