"""The grow phase gives blocks to the running requests newest first instead of oldest first.

When the pool runs dry the newest request is preempted either way, so the counts often agree; but
the oldest request, which should be served first, now waits behind the newcomers for its block,
and the blocks land in other tables. vLLM walks self.running in admission order. Symptom: the same
counts, other block ids.
"""

CAUGHT_BY = ["test_serve_paged_matches_brute_force"]

EDIT = (
    "        for r in list(tables):  # grow: the token sampled last step needs a slot now\n",
    "        for r in reversed(list(tables)):  # grow, newest first\n",
)
