"""An override is accepted whatever it cannot do.

This is what v0.10.1's get_attn_backend_cls does for dense backends, and the run then fails later,
when the layer or the KV cache is built. Symptom here: a Selection for FLASHINFER with head size
80, FLASH_ATTN in float32, FLEX_ATTENTION with a sliding window, a dense backend for an MLA layer.
"""

CAUGHT_BY = [
    "test_override_that_cannot_run_is_rejected",
]

EDIT = (
    '        if problems[override]:\n            raise ValueError(',
    "        if False:  # BUG: the override's problems are not looked at\n            raise ValueError(",
)
