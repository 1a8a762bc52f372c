"""Reasons only for backends with a problem: a backend that lost on priority gets no entry.

Symptom: Selection.rejected misses FLEX_ATTENTION whenever FLASH_ATTN wins, and the reader cannot
tell "could not" from "was not asked".
"""

CAUGHT_BY = ["test_dense_defaults", "test_mla_choices"]

EDIT = (
    '            else:\n                rejected[name] = f"lower priority than {chosen}"\n',
    '',
)
