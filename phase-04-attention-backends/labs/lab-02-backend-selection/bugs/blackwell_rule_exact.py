"""The Blackwell priority lists given to compute capability 10.0 only.

``_get_backend_priorities`` tests the major (``device_capability.major == 10``), so a 10.3 GPU
(B300) gets FlashInfer first too. Symptom: FLASH_ATTN first on (10, 3), and FLASH_ATTN_MLA first in its
MLA list (FlashInfer MLA still wins there: the two Hopper backends refuse a 10.x GPU).
"""

CAUGHT_BY = ["test_candidate_order"]

EDIT = (
    '    blackwell = capability[0] == 10  # device_capability.major == 10: 10.0 and 10.3 alike\n',
    '    blackwell = capability == (10, 0)  # BUG: the source tests the major\n',
)
