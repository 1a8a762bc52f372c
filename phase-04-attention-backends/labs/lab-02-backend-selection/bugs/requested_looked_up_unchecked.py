"""The mode asked for looked up in ``CUDAGRAPH_MODES`` without checking that it is a string.

Symptom: ``resolve_cudagraph_mode(["FULL"], ...)`` ends in "unhashable type: 'list'" from the
dictionary lookup instead of a ValueError naming ``requested``.
"""

CAUGHT_BY = ["test_resolve_cudagraph_mode_rejects_bad_input"]

EDIT = (
    "    if not isinstance(requested, str) or requested not in CUDAGRAPH_MODES:\n",
    "    if requested not in CUDAGRAPH_MODES:  # BUG: a list cannot be hashed\n",
)
