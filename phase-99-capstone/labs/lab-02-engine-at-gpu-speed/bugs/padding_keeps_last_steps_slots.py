"""A graph replayed with last step's metadata: the padding tokens keep the slots of the last step's tokens.

A full graph of 8 rows run for 6 decodes also writes the keys and values of rows 6 and 7: with their
slots left from the last step, they land in blocks of live requests (one of which may have just moved
rows), which later read them back as their own.
"""

CAUGHT_BY = ["test_graph_padding_is_harmless", "test_logits_match_generate_within_float32_tolerance"]

EDIT = (
    "        b.slot_mapping.np[n : plan.num_tokens] = PAD_SLOT\n",
    "",
)
