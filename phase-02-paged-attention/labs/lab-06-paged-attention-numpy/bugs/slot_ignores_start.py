"""build_slot_mapping counts tokens from 0 instead of from `start`.

Symptom: a prefill from position 0 is right; every later chunk and every decode step overwrites
the first tokens of the sequence, so attention after the second chunk sees the wrong keys and
unwritten (poisoned) slots.
"""

CAUGHT_BY = ["test_slot_mapping_formula", "test_chunked_prefill_write_path"]

EDIT = (
    "    t = np.arange(start, start + num_tokens, dtype=np.int64)\n",
    "    t = np.arange(num_tokens, dtype=np.int64)  # should start at `start`\n",
)
