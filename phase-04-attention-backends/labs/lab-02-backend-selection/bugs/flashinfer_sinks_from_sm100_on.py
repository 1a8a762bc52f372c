"""FlashInfer takes attention sinks on major 10 "or newer" instead of on major 10.

TRT-LLM attention needs ``is_device_capability_family(100)``: 10.x only. Symptom: a 12.0 card
credited with sinks on FlashInfer.
"""

CAUGHT_BY = ["test_sinks_per_backend", "test_sinks_choices"]

EDIT = (
    '        return capability[0] == 10\n'
    '    return backend == "TRITON_ATTN"\n',
    '        return capability[0] >= 10  # BUG: read as "at least"\n'
    '    return backend == "TRITON_ATTN"\n',
)
