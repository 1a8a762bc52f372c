"""A finished request's blocks go back to the pool head first instead of tail first.

The counts are the same (a block is a block), but the free queue's order is not: the first block
of the table is now the first to be handed out again, so the prefix a finished request shares with
others (with prefix caching, the part most worth keeping) is evicted before its private tail. vLLM
frees reversed(blocks). Symptom: the same counts, other block ids in later steps.
"""

CAUGHT_BY = ["test_serve_paged_matches_brute_force"]

EDIT = (
    "                pool.free_blocks(reversed(tables.pop(r)))\n",
    "                pool.free_blocks(tables.pop(r))  # head first\n",
)
