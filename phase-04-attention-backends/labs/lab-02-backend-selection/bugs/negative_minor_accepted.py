"""A capability with a negative minor accepted: ``(9, -1)`` passes.

The minor is checked only from above (``minor <= 9``). vLLM's DeviceCapability.to_int
(major * 10 + minor) reads (9, -1) as 89, an Ada GPU. Symptom: no ValueError for an impossible
capability.
"""

CAUGHT_BY = ["test_device_capability_rejects_impossible_gpus"]

EDIT = (
    '        and 0 <= gpu[1] <= 9\n',
    '        and gpu[1] <= 9  # BUG: a negative minor passes\n',
)
