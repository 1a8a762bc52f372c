"""An override is accepted whatever it cannot do.

v0.22.1's get_attn_backend_cls validates the backend it is asked for and refuses it with the
reasons ("Selected backend ... is not valid for this configuration"). Symptom here: a Selection
for FLASHINFER with head size 80, FLASH_ATTN in float32, FlashMLA off Hopper, a dense backend for
an MLA layer; the run would fail later, when the layer or its cache is built.
"""

CAUGHT_BY = ["test_override_that_cannot_run_is_rejected"]

EDIT = (
    '        if problems[override]:\n'
    '            raise ValueError(',
    "        if False:  # BUG: the override's problems are not looked at\n"
    '            raise ValueError(',
)
