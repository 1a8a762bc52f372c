"""The block table kept in its own dtype: an int32 table's slots are computed in int32 and wrap.

The given ``_as_block_table`` checks the table but leaves out its ``astype(np.int64)``. vLLM's
tables are int32, and under numpy 2's rules ``table[t // block_size] * block_size`` of an int32
table stays int32 (adding the int64 offsets afterwards makes the dtype right, too late): a block
id past 2**31 / block_size gives a slot past int32's range, which wraps around to a negative
number, a slot that ``write_kv`` skips as padding. Symptom: right slots for small block ids, int64
dtype included; for a large id in an int32 table, negative or wrong slots.
"""

CAUGHT_BY = ["test_slot_mapping_of_int32_tables_never_wraps"]

SOURCE = "_checks.py"  # the given input checks

EDIT = (
    "    return table.astype(np.int64)\n",
    "    return table  # kept as given: int32 for vLLM's tables\n",
)
