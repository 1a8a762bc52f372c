"""FlashMLA's Hopper-only rule left out: FlashMLA may run on any GPU.

``is_flashmla_supported`` says Hopper only (compute capability 9.x). Without the rule, an A100
serving DeepSeek with 64-token blocks gets FLASHMLA instead of TRITON_MLA, and an override of
FlashMLA on an A100 is accepted: vLLM's kernel would refuse to load there.
"""

CAUGHT_BY = ["test_backend_problems_name_the_limit", "test_mla_choices", "test_override_that_cannot_run_is_rejected"]

EDIT = (
    '    if backend == "FLASHMLA" and capability[0] != 9:\n',
    '    if False:  # BUG: FlashMLA taken for a kernel of every GPU\n',
)
