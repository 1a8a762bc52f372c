"""FlashInfer's capability range with its ends off: from 7.4, and 12.1 left out.

FlashInferBackend.supports_compute_capability is 7.5 <= capability <= 12.1, both ends included.
Symptom: FlashInfer accepted on a 7.4 GPU and refused on a 12.1 one.
"""

CAUGHT_BY = ["test_backend_problems_name_the_limit", "test_backend_problems_empty_when_it_can_run"]

EDIT = (
    '    if backend == "FLASHINFER" and not (7, 5) <= capability <= (12, 1):\n',
    '    if backend == "FLASHINFER" and not (7, 4) <= capability < (12, 1):  # BUG: both ends off\n',
)
