"""``prefill_chunk`` builds the chunk's slot mapping from position 0 instead of ``start``.

The first chunk is right. Every later chunk writes its keys and values over the prefix's first
slots (the prefix is lost) and leaves its own slots as they were, poison in the tests: its rows
attend to garbage, and the cache no longer holds the prompt.
"""

CAUGHT_BY = ["test_chunked_equals_one_shot", "test_prefill_chunk_writes_only_the_chunks_slots",
             "test_a_one_token_chunk_is_a_decode_step"]

EDIT = (
    "    slots = WRITE_PATH.build_slot_mapping(block_table, block_size, start, len(new_k))\n",
    "    slots = WRITE_PATH.build_slot_mapping(block_table, block_size, 0, len(new_k))  # BUG: from position 0\n",
)
