"""serve_paged checks the pool against the smallest request's peak instead of the largest's.

``.min()`` where ``.max()`` belongs: a stream whose largest request can never fit passes the
check, and the replay meets it later, with nothing running and nothing it can admit. Symptom: a
RuntimeError mid-replay instead of a ValueError naming stream up front.
"""

CAUGHT_BY = ["test_each_bad_argument_is_named"]

EDIT = (
    "        peak = int((stream[:, 1] + stream[:, 2] - 1).max())\n",
    "        peak = int((stream[:, 1] + stream[:, 2] - 1).min())\n",
)
