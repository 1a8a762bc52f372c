"""FlashInfer's compute-capability range (7.5 to 12.1) left out.

Symptom: FLASHINFER chosen on a V100 (7.0), where Triton is the first backend that runs.
"""

CAUGHT_BY = ["test_backend_problems_name_the_limit", "test_dense_defaults"]

EDIT = (
    '    if backend == "FLASHINFER" and not (7, 5) <= capability <= (12, 1):\n',
    '    if False:  # BUG: FlashInfer on every GPU\n',
)
