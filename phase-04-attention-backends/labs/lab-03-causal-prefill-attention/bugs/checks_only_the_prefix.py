"""The input check makes sure the table covers the cached prefix, not the prefix and the chunk.

A table one block too short for the chunk passes the check; the stream then indexes past the
table's end and numpy raises an IndexError from deep inside the loop, or, with a table that
has padding entries, silently reads the wrong block.
"""

CAUGHT_BY = ["test_bad_input_gets_a_clear_error"]

SOURCE = "_prefill_checks.py"  # a given check, edited

EDIT = (
    "    seq_len = start + q.shape[0]\n",
    "    seq_len = start  # BUG: only the prefix is checked\n",
)
