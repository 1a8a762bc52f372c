"""FlashInfer put first on every GPU from SM 10.0 up: ``>=`` where the source tests equality
(``is_device_capability(100)``).

Symptom: an SM 12.0 GPU (consumer Blackwell) gets FLASHINFER by default, where v0.10.1 picks
FLASH_ATTN.
"""

CAUGHT_BY = [
    "test_candidate_order",
    "test_dense_defaults",
]

EDIT = (
    '    if capability == (10, 0):  # is_device_capability(100)',
    '    if capability >= (10, 0):  # BUG: is_device_capability is exact',
)
