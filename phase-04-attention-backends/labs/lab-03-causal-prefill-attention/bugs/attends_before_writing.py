"""The chunk's K/V are written after attention reads the cache, not before.

Each row should see the chunk's own tokens up to itself, but when attention runs their slots
still hold whatever was there: poison in the tests (garbage or stale keys in a real cache). The
first row of a chunk cannot even see itself.
"""

CAUGHT_BY = [
    "test_chunked_equals_one_shot",
    "test_a_one_token_chunk_is_a_decode_step",
    "test_prefill_chunk_writes_only_the_chunks_slots",
]

EDITS = [
    (
        "    slots = WRITE_PATH.build_slot_mapping(block_table, block_size, start, len(new_k))\n"
        "    WRITE_PATH.write_kv(k_cache, v_cache, new_k, new_v, slots)\n"
        "    return paged_prefill_attention(q, k_cache, v_cache, block_table, start, block_size)\n",
        "    out = paged_prefill_attention(q, k_cache, v_cache, block_table, start, block_size)  # BUG: read first\n"
        "    slots = WRITE_PATH.build_slot_mapping(block_table, block_size, start, len(new_k))\n"
        "    WRITE_PATH.write_kv(k_cache, v_cache, new_k, new_v, slots)\n"
        "    return out\n",
    ),
]
