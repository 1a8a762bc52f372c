"""prefill_chunk leaves the checks to paged_prefill_attention, which it calls after the write.

Symptom: a bad argument (a table too short, a block size that is not the cache's, a float table, a
negative start) still ends in a ValueError, but only after the chunk's keys and values have been
written through it: into the wrong slots, or some of them, and the caches are no longer as they
were.
"""

CAUGHT_BY = ["test_prefill_chunk_checks_everything_before_writing", "test_bad_input_gets_a_clear_error"]

EDIT = (
    "    start, block_size = _check_chunk(q, new_k, new_v, k_cache, v_cache, block_table, start, block_size)\n",
    "    pass  # BUG: checked later, by paged_prefill_attention, after the write\n",
)
