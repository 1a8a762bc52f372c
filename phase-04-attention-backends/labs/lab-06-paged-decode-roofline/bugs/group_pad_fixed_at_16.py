"""The group's tile has 16 rows whatever the group: GROUP_PAD = 16.

``tl.dot`` needs at least 16 rows, and every group of the usual models (4, 5, 8 query heads per KV
head) fits. The checks accept any group, and multi-query models put 16, 32 or more query heads on
one KV head. Symptom: right up to 16 query heads per KV head; past that, the heads beyond the
16th of each group are never computed, and their outputs hold whatever the new tensor held.
"""

CAUGHT_BY = ["test_gqa_grouping"]

EDIT = (
    "GROUP_PAD=max(16, triton.next_power_of_2(group))",
    "GROUP_PAD=16",
)
