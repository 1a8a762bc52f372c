"""A rank with no token of a sequence reports m = 0 (with denom 0 and acc 0), not -inf.

0 is a score like any other: a rank that saw nothing claims to have seen a score of 0. Merged, its
"max" can exceed the real maxima (every real score below 0): the true terms are then rescaled by
exp(s - 0) and may underflow to nothing. Symptom: m = 0 where the summary of nothing is
(-inf, 0, zeros).
"""

CAUGHT_BY = [
    "test_rank_summaries_match_the_definition",
    "test_rank_summaries_of_an_empty_shard_are_identities",
]

EDIT = (
    "            m[b, h], denom[b, h], acc[b, h] = attend_partial(q[b, h], keys[:, kv], values[:, kv])\n",
    "            summary = attend_partial(q[b, h], keys[:, kv], values[:, kv])\n"
    "            m[b, h], denom[b, h], acc[b, h] = summary if len(local) else (0.0, 0.0, 0.0)\n",
)
