"""The block-id check forgets negative ids, and numpy reads block -1 as the last block of the cache.

A block table with a -1 in it (an uninitialised entry, a padding convention of another engine)
then silently attends over another sequence's keys and values. Symptom: no error, a wrong
answer; the check given in _checks.py refuses it with a ValueError naming block_table.
"""

CAUGHT_BY = ["test_bad_input_gets_a_clear_message"]

SOURCE = "_checks.py"  # the given input checks

EDIT = (
    "    if used.size and (used.min() < 0 or used.max() >= k_cache.shape[0]):\n",
    "    if used.size and used.max() >= k_cache.shape[0]:  # negative ids pass\n",
)
