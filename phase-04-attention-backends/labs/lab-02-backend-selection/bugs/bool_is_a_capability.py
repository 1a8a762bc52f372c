"""``device_capability`` takes ``(True, 0)`` for a GPU: a bool is an int in Python.

``isinstance(True, int)`` is True, so a check that only asks for ints lets ``(True, 0)`` through
as compute capability 1.0: a typo becomes a GPU, and the selector answers for it instead of
saying what is wrong.
"""

CAUGHT_BY = ["test_device_capability_rejects_impossible_gpus"]

EDIT = (
    "        and all(isinstance(x, int) and not isinstance(x, bool) for x in gpu)\n",
    "        and all(isinstance(x, int) for x in gpu)  # BUG: True and False pass as ints\n",
)
