"""The dispatcher ignores ``allowed``: backends that cannot serve the request compete.

Symptom: a dense SDPA kernel chosen for a request whose K/V live in a paged cache.
"""

CAUGHT_BY = ["test_choose_measured_respects_allowed", "test_choose_measured_bad_requests"]

EDIT = (
    '        if times.get(name) is not None and (allowed is None or name in allowed)\n',
    '        if times.get(name) is not None  # BUG: allowed is not applied\n',
)
