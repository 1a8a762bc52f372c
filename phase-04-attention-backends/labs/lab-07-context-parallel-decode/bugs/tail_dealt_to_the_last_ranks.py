"""The last, partial round of stripes dealt to the last ranks instead of the first.

Dealing starts at rank 0 in every round, so the tail goes to ranks 0, 1, ...; this counts from rank
world_size - 1 down. Symptom: the columns still sum to the lengths, but the counts sit on the wrong
ranks; the test's message names "the last round's stripes dealt to the last ranks".
"""

CAUGHT_BY = ["test_local_seq_lens_count_each_ranks_tokens"]

EDIT = (
    '    return full_rounds * stripe + np.clip(rest - ranks * stripe, 0, stripe)\n',
    '    return full_rounds * stripe + np.clip(rest - (world_size - 1 - ranks) * stripe, 0, stripe)\n',
)
