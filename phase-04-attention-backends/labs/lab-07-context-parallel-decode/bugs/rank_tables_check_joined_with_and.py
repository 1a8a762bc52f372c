"""The rank tables check joins "2-D", "integers" and "at least one rank" with ``and``: tables that
fail only one of them pass.

Float tables then index the pool with floats (an IndexError from deep inside numpy), a 1-D table is
read as one rank per entry, and tables of no rank reach token_owner, which blames world_size.
Symptom: shard_slot_mapping of float tables raises numpy's IndexError instead of a ValueError naming
rank_block_tables.
"""

CAUGHT_BY = ["test_layout_rejects_bad_input"]

SOURCE = "_checks.py"

EDIT = (
    '    if tables.ndim != 2 or tables.dtype.kind not in "iu" or tables.shape[0] == 0:\n',
    '    if tables.ndim != 2 and tables.dtype.kind not in "iu" and tables.shape[0] == 0:\n',
)
