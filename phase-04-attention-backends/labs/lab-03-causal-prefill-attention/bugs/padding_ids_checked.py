"""The kernel's value check reads every entry of the tables, padding included.

Entries past a sequence's blocks are padding: the kernel never reads them, and engines fill them
with anything (-1, say). Symptom: a batch whose tables are padded with -1 is refused with "block_tables
names blocks outside [0, num_blocks)".
"""

SOURCE = "_prefill_checks.py"

CAUGHT_BY = ["test_kernel_table_padding_is_never_checked"]

EDIT = (
    "    ids = block_tables[used]\n",
    "    ids = block_tables.flatten()  # BUG: the padding checked too\n",
)
