"""Capability compared as text: the bfloat16 check tests ``"10.0" < "8.0"``, which is True.

Text compares character by character, so every GPU from 10.0 up reads as older than 8.0. Symptom:
a bfloat16 model refused on a B200 and on a 12.0 card.
"""

CAUGHT_BY = ["test_platform_refusal", "test_dense_defaults"]

EDIT = (
    '    if dtype == "bfloat16" and capability < (8, 0):\n',
    '    if dtype == "bfloat16" and f"{capability[0]}.{capability[1]}" < "8.0":  # BUG: compares text\n',
)
