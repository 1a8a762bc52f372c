"""Capability compared as strings: the V1 gate tests ``"10.0" < "8.0"``, which is True.

Version numbers are not text: character by character, "1" sorts before "8", so Blackwell
(10.0) and anything newer than 9.9 look older than Ampere. Symptom: B200 refused by the V1
engine ("needs compute capability 8.0"), while A100, L4 and H100 work.
"""

CAUGHT_BY = [
    "test_v1_engine_gate",
    "test_dense_defaults",
    "test_fp8_cache_choices",
    "test_sinks_choices",
]

EDIT = (
    '    if capability < (8, 0):\n        return f"the V1 engine',
    '    if f"{capability[0]}.{capability[1]}" < "8.0":  # BUG: compares text, not versions\n'
    '        return f"the V1 engine',
)
