"""CUTLASS MLA and FlashInfer MLA given to compute capability 10.0 only.

Their supports_compute_capability tests the major (``capability.major == 10``). Symptom: a 10.3
GPU refused for CUTLASS MLA, and FlashInfer MLA not chosen there.
"""

CAUGHT_BY = ["test_backend_problems_empty_when_it_can_run", "test_mla_choices"]

EDIT = (
    '    if backend in ("FLASHINFER_MLA", "CUTLASS_MLA") and major != 10:\n',
    '    if backend in ("FLASHINFER_MLA", "CUTLASS_MLA") and capability != (10, 0):  # BUG: the major is tested\n',
)
