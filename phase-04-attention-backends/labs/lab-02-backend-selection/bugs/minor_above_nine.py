"""A capability with a two-digit minor accepted: ``(9, 10)`` passes.

vLLM's DeviceCapability.to_int (major * 10 + minor) assumes one digit: (9, 10) would read as 100,
Blackwell. Symptom: no ValueError for an impossible capability.
"""

CAUGHT_BY = ["test_device_capability_rejects_impossible_gpus"]

EDIT = (
    '        and 0 <= gpu[1] <= 9\n',
    '        and gpu[1] >= 0  # BUG: minor must be one digit\n',
)
