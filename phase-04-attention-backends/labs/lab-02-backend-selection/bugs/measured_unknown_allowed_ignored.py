"""``choose_measured`` ignores allowed names the matrix does not have.

A name in ``allowed`` that the matrix does not list is a typo or a stale matrix; ignoring it
answers with whatever else is allowed (or with "nothing left"), and the caller never learns that
the backend it meant was never measured.
"""

CAUGHT_BY = ["test_choose_measured_bad_requests"]

EDIT = (
    "        if unknown:\n",
    "        if False:  # BUG: unknown names ignored\n",
)
