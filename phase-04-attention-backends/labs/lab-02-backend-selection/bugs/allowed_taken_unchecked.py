"""choose_measured makes a set of ``allowed`` without the given check.

``set(allowed)`` of a number or of a list holding a list fails inside with a bare TypeError ("'int'
object is not iterable", "unhashable type: 'list'") that names neither the argument nor what it must be.
"""

CAUGHT_BY = ["test_choose_measured_refuses_allowed_of_the_wrong_type"]

EDIT = (
    "    allowed = _check_allowed(allowed)\n    if allowed is not None:\n",
    "    if allowed is not None:\n        allowed = set(allowed)  # BUG: taken unchecked\n",
)
