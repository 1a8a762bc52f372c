"""``split_summaries`` skips the given check: it trusts its caller as ``paged_decode`` trusts nothing.

Symptom: a bad count or input reaches the arithmetic and the kernel: ``num_splits=None`` dies in a
division with a message about ``NoneType``, int64 lengths are read as pairs of int32, a 2-D ``q``
fails deep inside the launch; never a ValueError naming split_summaries.
"""

CAUGHT_BY = ["test_split_summaries_bad_input_gets_a_clear_error"]

EDIT = (
    '    num_splits = _check_inputs("split_summaries", q, k_cache, v_cache, block_tables, seq_lens, num_splits,\n'
    "                               none_ok=False)\n",
    "    # BUG: no check: split_summaries trusts its caller\n",
)
