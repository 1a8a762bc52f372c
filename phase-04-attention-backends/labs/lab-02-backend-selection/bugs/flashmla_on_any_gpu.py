"""FlashMLA's Hopper-only rule left out: FlashMLA may run on any GPU.

Symptom: an A100 accepts ``--attention-backend FLASHMLA`` for DeepSeek, whose kernels are built
for Hopper only.
"""

CAUGHT_BY = ["test_backend_problems_name_the_limit", "test_override_that_cannot_run_is_rejected"]

EDIT = (
    '    if backend == "FLASHMLA" and major != 9:\n',
    '    if False:  # BUG: FlashMLA taken for a kernel of every GPU\n',
)
