"""FlashAttention's attention sinks tied to version 3.

v0.22.1's flash_attn_supports_sinks accepts version 3 or 4. Symptom: a B200 refuses sinks on
FLASH_ATTN, and a gpt-oss layer with head size 96 there goes to Triton.

History: in v0.10.1 only FlashAttention 3 took sinks.
"""

CAUGHT_BY = ["test_sinks_per_backend", "test_sinks_choices"]

EDIT = (
    '        return _flash_attn_version(capability) in (3, 4)\n',
    '        return _flash_attn_version(capability) == 3  # BUG: FlashAttention 4 has sinks too\n',
)
