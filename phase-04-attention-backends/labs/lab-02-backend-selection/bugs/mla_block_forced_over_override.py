"""On Hopper an MLA model's block size is forced to 64 even when the override names Triton MLA.

``check_and_update_config`` forces 64 for FlashMLA: by default on Hopper, or when FlashMLA is
named. An override of another MLA backend keeps the user's block size. Symptom: Triton MLA,
asked for by name on an H100, runs with 64-token blocks nobody asked for.
"""

CAUGHT_BY = ["test_override_is_obeyed"]

EDIT = (
    '        if override in (None, "FLASHMLA") and capability[0] == 9:\n',
    '        if capability[0] == 9:  # BUG: whatever the override\n',
)
