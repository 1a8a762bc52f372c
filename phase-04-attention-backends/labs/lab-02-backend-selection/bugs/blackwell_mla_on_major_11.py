"""FlashInfer MLA and CUTLASS MLA given to compute capability 11.x as well as 10.x.

Their supports_compute_capability tests ``capability.major == 10``. Symptom: on (11, 0) neither
backend is refused, and an MLA layer gets FLASHINFER_MLA where Triton MLA is the only one that runs.
"""

CAUGHT_BY = ["test_backend_problems_name_the_limit", "test_mla_choices"]

EDIT = (
    '    if backend in ("FLASHINFER_MLA", "CUTLASS_MLA") and major != 10:\n',
    '    if backend in ("FLASHINFER_MLA", "CUTLASS_MLA") and major not in (10, 11):  # BUG: major 10 only\n',
)
