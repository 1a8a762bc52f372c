"""MLA layers walk the dense priority list.

Symptom: candidate_order gives FLASH_ATTN, FLEX_ATTENTION for DeepSeek-style models; every one of
them refuses an MLA layer, so select_backend finds no backend where FLASHMLA, CUTLASS_MLA or
TRITON_MLA should run.
"""

CAUGHT_BY = [
    "test_candidate_order",
    "test_mla_choices",
]

EDIT = (
    '    if "mla" in features:\n        return MLA_BACKENDS\n',
    '',
)
