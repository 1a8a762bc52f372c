"""``supports`` not checked to be an iterable of levels before it is read.

Symptom: resolve_cudagraph_mode('FULL', None) (or 3) is a TypeError from list(), not a ValueError
naming supports.
"""

SOURCE = "_checks.py"

CAUGHT_BY = ["test_resolve_cudagraph_mode_rejects_bad_input"]

EDIT = (
    "    if isinstance(supports, str) or not isinstance(supports, Iterable):\n",
    "    if False:  # BUG: supports unchecked\n",
)
