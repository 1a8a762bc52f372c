"""The Blackwell priority lists used on every GPU from major 10 up: ``>=`` where the source tests equality.

``_get_backend_priorities`` asks ``device_capability.major == 10``. A 12.0 card is not in that
family: it keeps FlashAttention first (and no CUTLASS MLA in its MLA list). Symptom: FLASHINFER
first on (12, 0).
"""

CAUGHT_BY = ["test_candidate_order", "test_dense_defaults"]

EDIT = (
    '    blackwell = capability[0] == 10  # device_capability.major == 10: 10.0 and 10.3 alike\n',
    '    blackwell = capability[0] >= 10  # BUG: the source tests equality\n',
)
