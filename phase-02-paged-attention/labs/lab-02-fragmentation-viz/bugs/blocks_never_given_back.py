"""A finished request leaves the paged replay without freeing its blocks.

Symptom: the pool drains step by step; waiting requests stop being admitted long before the
memory is really full, and eventually nothing runs while a request waits that an empty pool
would fit (the solution raises RuntimeError there instead of looping forever).
"""

CAUGHT_BY = ["test_serve_paged_matches_brute_force"]

EDIT = (
    '                pool.free_blocks(reversed(tables.pop(r)))\n',
    '                tables.pop(r)  # its blocks stay taken\n',
)
