"""FlashMLA accepted on Blackwell: supports_compute_capability read alone.

FlashMLABackend takes majors 9 and 10 there, but its supports_combination asks
is_flashmla_dense_supported, which says Hopper only (10.x is for the sparse kernels). Symptom:
``--attention-backend FLASHMLA`` on a B200 accepted.
"""

CAUGHT_BY = ["test_backend_problems_name_the_limit", "test_override_that_cannot_run_is_rejected"]

EDIT = (
    '    if backend == "FLASHMLA" and major != 9:\n',
    '    if backend == "FLASHMLA" and major not in (9, 10):  # BUG: the dense check forgotten\n',
)
