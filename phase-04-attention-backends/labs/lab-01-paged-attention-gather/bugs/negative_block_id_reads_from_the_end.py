"""The block-id check forgets negative ids, and numpy reads block -1 as the last block of the cache.

A block table with a -1 in it (an uninitialised entry, another engine's padding convention) then
silently attends over another sequence's keys and values. Symptom: no error, a wrong answer; the
check given in starter.py refuses it with a ValueError naming block_table.
"""

SOURCE = "_checks.py"  # the given input checks

CAUGHT_BY = ["test_bad_input_gets_a_clear_message"]

EDIT = (
    "    if used.size and (used.min() < 0 or used.max() >= k_cache.shape[0]):\n",
    "    if used.size and used.max() >= k_cache.shape[0]:  # negative ids pass\n",
)
