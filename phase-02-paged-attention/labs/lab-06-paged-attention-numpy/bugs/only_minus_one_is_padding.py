"""write_kv takes only -1 for a padding slot, while every negative slot is padding.

The mask compares with vLLM's PAD_SLOT_ID alone. Symptom: a padding row of -2 or -7 overwrites a
slot near the end of the cache, which belongs to another sequence; one of the dtype's most
negative value is an IndexError far outside the cache.
"""

CAUGHT_BY = ["test_write_kv_skips_padding_slots"]

EDIT = (
    "    keep = slot_mapping >= 0\n",
    "    keep = slot_mapping != -1  # PAD_SLOT_ID only\n",
)
