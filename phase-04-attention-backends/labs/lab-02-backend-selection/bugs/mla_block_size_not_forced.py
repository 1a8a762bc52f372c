"""The platform's block size for MLA not applied: check_and_update_config's 64 (FlashMLA on
Hopper) and 128 (CUTLASS MLA) forgotten.

Symptom: on an H100 DeepSeek keeps 16-token blocks, FlashMLA (64 only) is refused and TRITON_MLA
is chosen; an override to FLASHMLA is refused for its block size.
"""

CAUGHT_BY = [
    "test_mla_choices",
    "test_override_is_obeyed",
]

EDIT = (
    '    if mla:\n        if override is None and capability == (10, 0):',
    '    if False:  # BUG: the MLA block sizes are never forced\n'
    '        if override is None and capability == (10, 0):',
)
