"""An empty ``allowed`` read as "no filter": every backend competes.

``allowed=None`` means no filter; an empty collection allows nothing, and the dispatcher must
say that no allowed backend is left. Symptom: ``allowed=set()`` (a request no measured backend
can serve) gets the fastest backend of the entry instead of a ValueError.
"""

CAUGHT_BY = ["test_choose_measured_bad_requests"]

EDITS = [
    ("    allowed = _check_allowed(allowed)\n    if allowed is not None:\n",
     "    allowed = _check_allowed(allowed)\n    if allowed:  # BUG: an empty allowed is not None\n"),
    ("        if times.get(name) is not None and (allowed is None or name in allowed)\n",
     "        if times.get(name) is not None and (not allowed or name in allowed)\n"),
]
