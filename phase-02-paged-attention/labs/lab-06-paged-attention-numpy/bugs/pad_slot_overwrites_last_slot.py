"""write_kv writes every row, padding included: PAD_SLOT_ID = -1 is used as an index.

numpy reads index -1 as "the last slot of the cache", so each padding row of a batch overwrites
the last slot of the last block, which belongs to some other sequence (or to nobody yet).
Symptom: nothing wrong in this sequence; another sequence's token changes under it.
"""

CAUGHT_BY = ["test_write_kv_skips_padding_slots"]

EDIT = (
    "    keep = slot_mapping >= 0\n",
    "    keep = np.ones(len(slot_mapping), dtype=bool)  # padding slots (-1) written too\n",
)
