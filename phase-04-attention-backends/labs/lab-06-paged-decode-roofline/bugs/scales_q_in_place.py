"""The scale is folded into q once, in place (q *= 1/sqrt(head_dim)), instead of into every
tile's scores.

The output is right. Symptom: the caller's q has changed; the next layer, or a second call
with the same q, sees scaled queries.
"""

CAUGHT_BY = ["test_one_split_matches_reference", "test_gqa_grouping"]

EDITS = [
    (
        "    if out.numel():\n        capacity",
        "    if out.numel():\n        q.mul_(q.shape[-1] ** -0.5)  # fold the scale into q, once\n        capacity",
    ),
    (
        "        SCALE=1.0 / math.sqrt(head_dim),\n",
        "        SCALE=1.0 if one_split else 1.0 / math.sqrt(head_dim),  # q is pre-scaled\n",
    ),
]
