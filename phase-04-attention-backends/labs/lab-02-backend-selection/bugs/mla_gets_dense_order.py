"""MLA layers walk the dense priority list.

Symptom: every MLA layer is refused by all four dense backends and, with no MLA backend tried,
select_backend raises for DeepSeek on every GPU.
"""

CAUGHT_BY = ["test_candidate_order", "test_mla_choices"]

EDIT = (
    '    if "mla" in features:\n'
    '        if blackwell:\n',
    '    if False:  # BUG: MLA falls through to the dense list\n'
    '        if blackwell:\n',
)
