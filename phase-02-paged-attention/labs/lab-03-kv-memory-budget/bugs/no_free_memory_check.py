"""A utilization the free memory cannot cover is accepted.

The budget then includes memory another process holds; vLLM refuses to start instead.
Symptom: no error, and an out-of-memory later, when the cache is allocated.
"""

CAUGHT_BY = ["test_utilization_the_free_memory_cannot_cover_is_refused"]

EDIT = (
    '    if free_memory < requested:\n',
    '    if False:  # no check\n',
)
